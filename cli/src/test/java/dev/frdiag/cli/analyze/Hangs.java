package dev.frdiag.cli.analyze;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.cli.ExitCode;
import dev.frdiag.proto.v1.Verdict;
import dev.frdiag.report.Report;
import dev.frdiag.testing.dumps.DumpWriter.Encoding;
import dev.frdiag.testing.dumps.FaultyDumps;
import dev.frdiag.testing.dumps.FaultyDumps.Kind;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.provider.Arguments;

/** Generated hangs of every kind, and the check that {@code fr-diagnose analyze} names what went wrong. */
final class Hangs {
  /** The prefix PyTorch writes by default. */
  static final String PREFIX = "comm_lib_trace_rank_";

  private Hangs() {}

  /**
   * One generated hang per kind, in the forms that matter for it: GPU stalls with and without start events,
   * fabric faults with them (without, see {@link ExitCodesTest}), and two kinds in only-active dumps as the
   * real samples are.
   */
  static Stream<Arguments> everyKind(int ranks, int entries, int faultyRank) {
    List<Arguments> out = new ArrayList<>();
    for (Kind kind : Kind.values()) {
      if (kind == Kind.NONE) {
        continue; // a healthy job: no hang to name
      }
      if (kind == Kind.GPU_STALL) {
        out.add(Arguments.of(job(ranks, entries, kind, faultyRank).timing(false)));
        out.add(Arguments.of(job(ranks, entries, kind, faultyRank).timing(true)));
      } else {
        out.add(Arguments.of(job(ranks, entries, kind, faultyRank).timing(kind == Kind.FABRIC)));
      }
    }
    out.add(Arguments.of(job(ranks, entries, Kind.CPU_STALL, faultyRank).onlyActive(true)));
    out.add(Arguments.of(job(ranks, entries, Kind.GPU_STALL, faultyRank).onlyActive(true)));
    return out.stream();
  }

  static Case job(int ranks, int entries, Kind kind, int faultyRank) {
    return new Case(ranks, entries, kind, faultyRank, false, false, 1);
  }

  /** A hang to generate; built lazily, so listing the cases costs nothing. */
  record Case(int ranks, int entries, Kind kind, int faultyRank, boolean timing, boolean onlyActive, long seed) {
    Case timing(boolean on) {
      return new Case(ranks, entries, kind, faultyRank, on, onlyActive, seed);
    }

    Case onlyActive(boolean on) {
      return new Case(ranks, entries, kind, faultyRank, timing, on, seed);
    }

    Case seed(long s) {
      return new Case(ranks, entries, kind, faultyRank, timing, onlyActive, s);
    }

    FaultyDumps build() {
      return FaultyDumps.builder().ranks(ranks).entriesPerRank(entries).fault(kind, faultyRank).timing(timing)
          .onlyActive(onlyActive).seed(seed).build();
    }

    @Override
    public String toString() {
      return kind + (kind == Kind.FABRIC ? "" : " on rank " + faultyRank) + " of " + ranks
          + (timing ? ", with start events" : "") + (onlyActive ? ", only active entries" : "");
    }
  }

  static FaultyDumps write(Case c, Path dir, Encoding encoding) {
    FaultyDumps job = c.build();
    try {
      job.write(dir, PREFIX, encoding);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return job;
  }

  /** Analyses {@code dir} and checks the verdict names the injected fault: its rank (or none) and symptom. */
  static Analyze.Result assertDiagnosed(FaultyDumps job, Path dir) {
    Analyze.Result r = Analyze.json(dir);
    assertThat(r.code()).as(r.err()).isEqualTo(ExitCode.HANG);
    Report report = r.report();
    assertThat(report.verdict()).isEqualTo(Verdict.HANG);
    assertThat(report.symptom()).as(report.headline()).isEqualTo(job.symptom());
    assertThat(report.culpritRanks()).as(report.headline()).isEqualTo(job.culprits());
    return r;
  }
}

package dev.frdiag.daemon.watchdog;

import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.HangAnalyzer;
import dev.frdiag.analysis.JobEvidence;
import dev.frdiag.analysis.RankEvidence;
import dev.frdiag.analysis.Warmup;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.registry.JobRegistry;
import dev.frdiag.daemon.registry.TemplateTable;
import dev.frdiag.proto.RecordTemplates;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.InternedFrame;
import dev.frdiag.proto.v1.RecordBatch;
import dev.frdiag.proto.v1.RecordTemplate;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportDraft;
import dev.frdiag.report.ReportJson;
import dev.frdiag.report.ReportText;
import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * Rehearses an incident on a synthetic stalled job ({@link Warmup#syntheticStall}) before the first real one: its
 * ranks' records taken into windows by template as reporters send them, the evidence built from windows and from
 * replies that say their records are on the stream, analysed, and the report rendered as the store writes it.
 * Otherwise the first incident compiles these paths while it runs: at 16,384 ranks the compiler took a third to
 * half of a core during the analysis, compiling the window and report paths a warm-up of the analysis alone never
 * ran, and recompiling the analysis itself, whose code the JVM had flushed as cold ({@code fr-daemon} now keeps it).
 * The synthetic job has what live ones have (send/recv pairs, progress counters, stacks), so the compiled code
 * already covers those branches.
 */
public final class IncidentWarmup {
  private static final int RANKS = 64;
  private static final int STEPS = 40;

  private IncidentWarmup() {}

  /**
   * Rehearses {@code rounds} incidents, fewer when the thread is interrupted (the daemon closing); returns the last
   * report (not stored anywhere).
   */
  public static Report run(int rounds) {
    JobEvidence synthetic = Warmup.syntheticStall(RANKS, STEPS);
    Report report = null;
    for (int i = 0; i < rounds && (i == 0 || !Thread.currentThread().isInterrupted()); i++) {
      report = rehearse(synthetic);
    }
    return report;
  }

  private static Report rehearse(JobEvidence synthetic) {
    Job job = new JobRegistry(STEPS * 3).getOrCreate("warmup", RANKS, 0, 0);
    Map<Integer, DumpReply> replies = new HashMap<>();
    Set<Integer> standIns = new HashSet<>();
    for (RankEvidence rank : synthetic.ranks()) {
      String session = "warmup-" + rank.rank();
      job.attach(rank.identity().toBuilder().setJobId("warmup").build(), rank.groups(), request -> { }, session, 0,
          0, 0);
      Map<RecordTemplate, Integer> ids = new HashMap<>();
      RecordBatch.Builder batch = RecordBatch.newBuilder();
      for (CollectiveRecord r : rank.records()) {
        RecordTemplate fields = RecordTemplates.of(0, r);
        Integer id = ids.get(fields);
        if (id == null) {
          id = ids.size() + 1;
          ids.put(fields, id);
          batch.addTemplates(fields.toBuilder().setId(id));
        }
        batch.addRecords(RecordTemplates.naming(r, id));
      }
      rank.frames().forEach((id, frame) -> batch.addFrames(InternedFrame.newBuilder().setId(id).setFrame(frame)));
      job.records(rank.rank(), session, batch.build(), new TemplateTable(), 1);
      job.heartbeat(rank.rank(), session, rank.progress(), 0, synthetic.observedAtNs(), true, 1, 0);
      // Half answer saying their records are on the stream, half stand in with their windows.
      if (rank.rank() % 2 == 0) {
        replies.put(rank.rank(), DumpReply.newBuilder().setRecordsOnStream(true).addAllProgress(rank.progress())
            .build());
      } else {
        standIns.add(rank.rank());
      }
    }
    JobEvidence evidence = job.evidence(replies, standIns, synthetic.observedAtNs(), synthetic.stallThreshold(),
        "warm-up");
    Diagnosis d = HangAnalyzer.analyze(evidence);
    Report report = ReportDraft.of("warmup", Report.Trigger.STALL).scheduler(job.scheduler())
        .finish("warmup-000001", d, Instant.EPOCH, "warm-up");
    ReportText.markdown(report);
    ReportJson.write(report);
    return report;
  }
}

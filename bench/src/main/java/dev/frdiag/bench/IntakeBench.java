package dev.frdiag.bench;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.frdiag.analysis.HangAnalyzer;
import dev.frdiag.analysis.JobEvidence;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.registry.TemplateTable;
import dev.frdiag.proto.RecordTemplates;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.Heartbeat;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.proto.v1.RecordBatch;
import dev.frdiag.proto.v1.RecordTemplate;
import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.testing.sim.Fault;
import dev.frdiag.testing.sim.RankSimulator;
import dev.frdiag.testing.sim.Records;
import dev.frdiag.testing.sim.Topology;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Prints what the daemon's record intake costs per record: a rank's record batch parsed from its wire bytes
 * ({@code RankMessage.parseFrom}, as gRPC does), checked and taken into the job's per-rank window by the one call a
 * rank stream makes ({@code Job.records}), on one thread. The batches are what fr-sim's ranks send: each step's records once when issued (scheduled) and once
 * more when completed; once as whole records, once naming templates. The last step hangs (a GPU stall on rank
 * ranks/2+1), as in fr-sim's scale runs. Also prints the heap the windows hold per record, and how long an incident
 * takes to build its evidence from those windows and analyse it (the stuck groups' every seq checked). Usage:
 * {@code java -cp bench/target/frdiag-bench.jar dev.frdiag.bench.IntakeBench [ranks] [rounds]}.
 */
public final class IntakeBench {
  private static final int STEPS = 8;

  private IntakeBench() {}

  public static void main(String[] args) throws InvalidProtocolBufferException {
    int ranks = args.length > 0 ? Integer.parseInt(args[0]) : 4096;
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 7;
    for (boolean templated : new boolean[] {false, true}) {
      System.out.println(templated ? "records naming templates (reporters of this version)"
          : "records carrying their own group, op, tensors and stack (older reporters)");
      run(ranks, rounds, batches(ranks, templated));
    }
  }

  private static void run(int ranks, int rounds, List<List<byte[]>> batches) throws InvalidProtocolBufferException {
    long records = 0;
    long bytes = 0;
    for (List<byte[]> rank : batches) {
      for (byte[] b : rank) {
        records += RankMessage.parseFrom(b).getRecords().getRecordsCount();
        bytes += b.length;
      }
    }
    System.out.printf("%d ranks, %d records per round in %d batches, %.0f bytes per record on the wire%n", ranks,
        records, batches.stream().mapToInt(List::size).sum(), bytes / (double) records);
    System.out.printf("%6s %14s %14s %14s%n", "round", "parse ns/rec", "intake ns/rec", "total ns/rec");
    long[] parse = new long[rounds];
    long[] intake = new long[rounds];
    Job job = null;
    for (int round = 0; round < rounds; round++) {
      job = WatchdogBench.connectedJob(ranks);
      // Parsed first, then taken in: the two costs apart, each over the whole round.
      long t0 = System.nanoTime();
      List<List<RankMessage>> parsed = parse(batches);
      long t1 = System.nanoTime();
      intake(job, parsed);
      long t2 = System.nanoTime();
      parse[round] = t1 - t0;
      intake[round] = t2 - t1;
      System.out.printf("%6d %14.0f %14.0f %14.0f%n", round, (t1 - t0) / (double) records,
          (t2 - t1) / (double) records, (t2 - t0) / (double) records);
    }
    System.out.printf("median %14.0f %14.0f %14.0f%n", median(parse) / (double) records,
        median(intake) / (double) records, (median(parse) + median(intake)) / (double) records);
    int window = job.window();
    job = null;
    // The windows' heap: one more round into a fresh job, measured against the heap before it.
    System.gc();
    long before = usedHeap();
    Job filled = WatchdogBench.connectedJob(ranks);
    intake(filled, parse(batches));
    System.gc();
    long kept = (long) ranks * Math.min(window, records / ranks);
    System.out.printf("windows hold about %.0f bytes per kept record (%d records kept, window %d)%n",
        (usedHeap() - before) / (double) kept, kept, window);
    // What an incident then does with the windows: build the analysis input from them all, and analyse it.
    Set<Integer> all = new HashSet<>();
    for (int r = 0; r < ranks; r++) {
      all.add(r);
    }
    long[] build = new long[rounds];
    long[] analyse = new long[rounds];
    long[] allocated = new long[rounds];
    Diagnosis d = null;
    for (int i = 0; i < rounds; i++) {
      long t0 = System.nanoTime();
      // Observed well after the hang began, so that its groups count as stalled.
      JobEvidence evidence = filled.evidence(Map.of(), all, newestNs(batches) + Duration.ofMinutes(1).toNanos(),
          Duration.ofSeconds(10), "");
      long a0 = allocatedBytes();
      long t1 = System.nanoTime();
      d = HangAnalyzer.analyze(evidence);
      build[i] = t1 - t0;
      analyse[i] = System.nanoTime() - t1;
      allocated[i] = allocatedBytes() - a0;
    }
    System.out.printf("an incident on these windows: evidence built in %.0f ms (first %.0f), analysed in %.0f ms"
        + " (first %.0f) allocating %.0f MB, medians of %d; %s %s %s%n", median(build) / 1e6, build[0] / 1e6,
        median(analyse) / 1e6, analyse[0] / 1e6, median(allocated) / 1e6, rounds, d.verdict(), d.symptom(),
        d.culpritRanks());
  }

  private static long newestNs(List<List<byte[]>> batches) throws InvalidProtocolBufferException {
    long newest = 0;
    for (List<byte[]> rank : batches) {
      for (byte[] b : rank) {
        for (CollectiveRecord r : RankMessage.parseFrom(b).getRecords().getRecordsList()) {
          newest = Math.max(newest, Math.max(r.getTimeCreatedNs(), r.getTimeCompletedNs()));
        }
      }
    }
    return newest;
  }

  /**
   * Bytes allocated so far by every live thread: the analysis runs on the common pool's threads too, which outlive
   * it, and nothing else runs meanwhile.
   */
  private static long allocatedBytes() {
    com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long total = 0;
    for (long bytes : threads.getThreadAllocatedBytes(threads.getAllThreadIds())) {
      total += Math.max(0, bytes);
    }
    return total;
  }

  private static long median(long[] values) {
    long[] sorted = values.clone();
    Arrays.sort(sorted);
    return sorted[sorted.length / 2];
  }

  private static List<List<RankMessage>> parse(List<List<byte[]>> batches) throws InvalidProtocolBufferException {
    List<List<RankMessage>> parsed = new ArrayList<>(batches.size());
    for (List<byte[]> rank : batches) {
      List<RankMessage> messages = new ArrayList<>(rank.size());
      for (byte[] b : rank) {
        messages.add(RankMessage.parseFrom(b));
      }
      parsed.add(messages);
    }
    return parsed;
  }

  private static void intake(Job job, List<List<RankMessage>> parsed) {
    for (int rank = 0; rank < parsed.size(); rank++) {
      // The stream's templates, as the daemon's session keeps them.
      TemplateTable templates = new TemplateTable();
      for (RankMessage m : parsed.get(rank)) {
        if (m.hasHeartbeat()) {
          job.heartbeat(rank, "s" + rank, m.getHeartbeat().getProgressList(), 0, 0, false, 2_000_000_000L, 2_000);
          continue;
        }
        job.records(rank, "s" + rank, m.getRecords(), templates, 2_000_000_000L);
      }
    }
  }

  private static long usedHeap() {
    Runtime rt = Runtime.getRuntime();
    return rt.totalMemory() - rt.freeMemory();
  }

  /**
   * Each rank's record batches for {@value #STEPS} steps of fr-sim's workload, as wire bytes; with {@code
   * templated}, each distinct group, op, tensors and stack sent once per rank as a template, as the reporter does.
   */
  private static List<List<byte[]>> batches(int ranks, boolean templated) {
    List<List<byte[]>> out = new ArrayList<>(ranks);
    try (RankSimulator sim = RankSimulator.builder().topology(Topology.builder().worldSize(ranks).build())
        .fault(Fault.gpuStall(ranks / 2 + 1, STEPS - 1)).steps(STEPS).build()) {
      sim.runSteps(STEPS);
      for (int rank = 0; rank < ranks; rank++) {
        List<CollectiveRecord> all = Records.all(sim.recorder(rank));
        List<byte[]> batches = new ArrayList<>();
        Map<RecordTemplate, Integer> templates = new HashMap<>();
        for (int step = 0; step < STEPS; step++) {
          List<CollectiveRecord> done = all.subList(step * all.size() / STEPS, (step + 1) * all.size() / STEPS);
          RecordBatch.Builder issued = RecordBatch.newBuilder();
          RecordBatch.Builder finished = RecordBatch.newBuilder();
          for (CollectiveRecord r : done) {
            CollectiveRecord scheduled = r.toBuilder().setState(CollectiveState.SCHEDULED).clearTimeStartedNs()
                .clearTimeCompletedNs().clearDurationMs().build();
            issued.addRecords(templated ? templated(scheduled, templates, issued) : scheduled);
            finished.addRecords(templated ? templated(r, templates, finished) : r);
          }
          batches.add(RankMessage.newBuilder().setRecords(issued).build().toByteArray());
          batches.add(RankMessage.newBuilder().setRecords(finished).build().toByteArray());
        }
        // Then a heartbeat with the rank's progress, as a reporter sends after its records.
        batches.add(RankMessage.newBuilder().setHeartbeat(Heartbeat.newBuilder()
            .addAllProgress(sim.recorder(rank).progress())).build().toByteArray());
        out.add(batches);
      }
    }
    return out;
  }

  /** {@code r} naming its template, which is added to {@code batch} when new. */
  private static CollectiveRecord templated(CollectiveRecord r, Map<RecordTemplate, Integer> templates,
      RecordBatch.Builder batch) {
    RecordTemplate fields = RecordTemplates.of(0, r);
    Integer id = templates.get(fields);
    if (id == null) {
      id = templates.size() + 1;
      templates.put(fields, id);
      batch.addTemplates(fields.toBuilder().setId(id));
    }
    return RecordTemplates.naming(r, id);
  }
}

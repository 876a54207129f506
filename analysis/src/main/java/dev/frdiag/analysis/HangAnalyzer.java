package dev.frdiag.analysis;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Finds which rank diverged, on which collective, and why, from every rank's evidence.
 *
 * <p>A pure function: no I/O, no clock; the same evidence in any rank order gives the same diagnosis. The phases,
 * in order: {@link StuckOperations} finds the operations with outstanding work and no progress;
 * {@link MemberClassifier} says where each member is and whom to suspect; {@link SignatureCheck} finds members
 * that disagree on what an operation is; {@link VerdictRules} picks the cause, culprits and confidence;
 * {@link ContextRules} weighs what the nodes' NCCL logs and InfiniBand counters say. Thread-safe.
 */
public final class HangAnalyzer {
  private HangAnalyzer() {}

  /** Analyses {@code job}. */
  public static Diagnosis analyze(JobEvidence job) {
    JobIndex index = new JobIndex(job);
    Rhythm rhythm = new Rhythm(index);
    StuckOperations stuck = StuckOperations.find(index, rhythm);
    MemberClassifier.classify(index, stuck, rhythm);
    List<SignatureCheck.Mismatch> mismatches = SignatureCheck.check(index, stuck);
    for (SignatureCheck.Mismatch m : mismatches) {
      StuckOp op = stuck.op(m.group(), m.seq(), m.p2p());
      m.evidence().ranks().forEach(rank -> op.suspect(Cause.MISMATCH, rank));
    }
    List<Evidence> jobEvidence = new ArrayList<>(MemberClassifier.rankEvents(index, stuck));
    jobEvidence.addAll(stuck.earlierCuts());
    Diagnosis fromRecords = new VerdictRules(index, stuck, rhythm).verdict(mismatches, jobEvidence);
    Diagnosis d = atMostAsSureAsItsSources(ContextRules.apply(fromRecords, job), job);
    return d.withProgress(GroupProgress.of(index, stuck, d.collective(), d.culpritRanks()))
        .withFabric(FabricMap.of(job, d.symptom(), d.culpritRanks(), d.culpritHosts()));
  }

  /** The most a verdict may claim when no rank's own ring is in the evidence: log lines and counters alone. */
  static final double LOGS_ALONE = 0.8;

  /**
   * Log lines say what a process printed, not what it recorded: lines get cut, wrapped and interleaved, and a
   * process may print only some of what it did. A verdict resting on them (no rank's ring at all, or a culprit
   * known only from its lines) never claims the certainty of the records themselves, and the report says which
   * ranks were read from which source.
   */
  private static Diagnosis atMostAsSureAsItsSources(Diagnosis d, JobEvidence job) {
    List<Integer> logged = new ArrayList<>();
    List<Integer> recorded = new ArrayList<>();
    for (RankEvidence r : job.ranks()) {
      if (r.source() == RankEvidence.Source.LOG) {
        logged.add(r.rank());
      } else if (!r.isEmpty()) {
        recorded.add(r.rank());
      }
    }
    Collections.sort(logged);
    Collections.sort(recorded);
    boolean culpritFromLog = d.culpritRanks().stream().anyMatch(logged::contains);
    double confidence = recorded.isEmpty() || culpritFromLog ? Math.min(d.confidence(), LOGS_ALONE)
        : d.confidence();
    if (logged.isEmpty() && confidence == d.confidence()) {
      return d;
    }
    List<Evidence> evidence = new ArrayList<>(d.evidence());
    if (!logged.isEmpty()) {
      evidence.add(new Evidence(Evidence.Kind.SOURCES, logged, (recorded.isEmpty() ? ""
          : Wording.capitalize(Wording.who(recorded)) + ": Flight Recorder records; ")
          + (recorded.isEmpty() ? Wording.capitalize(Wording.who(logged)) : Wording.who(logged))
          + ": only the lines " + (logged.size() == 1 ? "it" : "they") + " printed (what a process said, not what "
          + "it recorded)"));
    }
    return new Diagnosis(d.verdict(), d.symptom(), d.culpritRanks(), d.culpritHosts(), d.collective(), confidence,
        evidence, d.culprits(), d.stuck(), d.rankStates(), d.headline(), d.recommendation(), d.stuckSinceNs());
  }
}

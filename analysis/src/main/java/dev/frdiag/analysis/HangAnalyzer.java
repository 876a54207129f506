package dev.frdiag.analysis;

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
    StuckOperations stuck = StuckOperations.find(index);
    MemberClassifier.classify(index, stuck);
    List<SignatureCheck.Mismatch> mismatches = SignatureCheck.check(index, stuck);
    for (SignatureCheck.Mismatch m : mismatches) {
      StuckOp op = stuck.op(m.group(), m.seq(), m.p2p());
      m.evidence().ranks().forEach(rank -> op.suspect(Cause.MISMATCH, rank));
    }
    List<Evidence> rankEvents = MemberClassifier.rankEvents(index, stuck);
    Diagnosis fromRecords = new VerdictRules(index, stuck).verdict(mismatches, rankEvents);
    return ContextRules.apply(fromRecords, job);
  }
}

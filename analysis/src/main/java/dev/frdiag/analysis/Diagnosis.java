package dev.frdiag.analysis;

import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.util.List;

/**
 * The result of one analysis: which rank diverged, on which collective, and why.
 *
 * @param verdict HANG, NO_HANG or INSUFFICIENT_EVIDENCE
 * @param symptom the class of cause
 * @param culpritRanks sorted global ranks to blame (empty for a fabric fault without link evidence)
 * @param culpritHosts sorted hosts of the culprits, or of the faulty link
 * @param collective the collective where the hang sits; null when there is none
 * @param confidence 0..1
 * @param evidence the facts, most important first
 * @param culprits per culprit details
 * @param stuck every stuck collective, root causes first
 * @param rankStates ranks grouped by where they are ("waiting in tp0#42 _all_gather_base" → ranks)
 * @param headline the verdict in one sentence
 * @param recommendation what to do next
 * @param stuckSinceNs epoch ns when the first member issued the stuck collective; 0 when unknown
 */
public record Diagnosis(Verdict verdict, Symptom symptom, List<Integer> culpritRanks, List<String> culpritHosts,
    CollectiveRef collective, double confidence, List<Evidence> evidence, List<Culprit> culprits,
    List<StuckCollective> stuck, List<RankGroup> rankStates, String headline, String recommendation,
    long stuckSinceNs) {

  public Diagnosis {
    if (confidence < 0 || confidence > 1) {
      throw new IllegalArgumentException("confidence must be within 0..1, got " + confidence);
    }
    culpritRanks = List.copyOf(culpritRanks);
    culpritHosts = List.copyOf(culpritHosts);
    evidence = List.copyOf(evidence);
    culprits = List.copyOf(culprits);
    stuck = List.copyOf(stuck);
    rankStates = List.copyOf(rankStates);
  }

  /** Ranks that share one situation. */
  public record RankGroup(String state, List<Integer> ranks) {}
}

package dev.frdiag.analysis;

import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.util.List;
import java.util.Objects;

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
 * @param progress where each member of the stuck groups stands around the stuck seq, root causes first
 * @param fabric for a network verdict, the hosts, GPUs, NICs and ports involved and the findings on each; null
 *     otherwise
 * @param lateness for a straggler analysis, how late each rank arrived at the window's collectives; null
 *     otherwise
 */
public record Diagnosis(Verdict verdict, Symptom symptom, List<Integer> culpritRanks, List<String> culpritHosts,
    CollectiveRef collective, double confidence, List<Evidence> evidence, List<Culprit> culprits,
    List<StuckCollective> stuck, List<RankGroup> rankStates, String headline, String recommendation,
    long stuckSinceNs, List<GroupProgress> progress, FabricMap fabric, Lateness lateness) {

  /** A diagnosis without the members' positions (the rules' own result, before they are added). */
  public Diagnosis(Verdict verdict, Symptom symptom, List<Integer> culpritRanks, List<String> culpritHosts,
      CollectiveRef collective, double confidence, List<Evidence> evidence, List<Culprit> culprits,
      List<StuckCollective> stuck, List<RankGroup> rankStates, String headline, String recommendation,
      long stuckSinceNs) {
    this(verdict, symptom, culpritRanks, culpritHosts, collective, confidence, evidence, culprits, stuck,
        rankStates, headline, recommendation, stuckSinceNs, List.of(), null, null);
  }

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
    progress = List.copyOf(progress);
  }

  /** This diagnosis with the members' positions in the stuck groups. */
  public Diagnosis withProgress(List<GroupProgress> groups) {
    return new Diagnosis(verdict, symptom, culpritRanks, culpritHosts, collective, confidence, evidence, culprits,
        stuck, rankStates, headline, recommendation, stuckSinceNs, groups, fabric, lateness);
  }

  /** This diagnosis with the picture of where its network verdict sits (null for none). */
  public Diagnosis withFabric(FabricMap map) {
    return new Diagnosis(verdict, symptom, culpritRanks, culpritHosts, collective, confidence, evidence, culprits,
        stuck, rankStates, headline, recommendation, stuckSinceNs, progress, map, lateness);
  }

  /** This diagnosis with the figures of a straggler analysis (null for none). */
  public Diagnosis withLateness(Lateness figures) {
    return new Diagnosis(verdict, symptom, culpritRanks, culpritHosts, collective, confidence, evidence, culprits,
        stuck, rankStates, headline, recommendation, stuckSinceNs, progress, fabric, figures);
  }

  /** This diagnosis with {@code more} evidence after its own. */
  public Diagnosis withEvidence(List<Evidence> more) {
    List<Evidence> all = new java.util.ArrayList<>(evidence);
    all.addAll(more);
    return new Diagnosis(verdict, symptom, culpritRanks, culpritHosts, collective, confidence, all, culprits,
        stuck, rankStates, headline, recommendation, stuckSinceNs, progress, fabric, lateness);
  }

  /**
   * Ranks that share one situation.
   *
   * @param state where they are
   * @param at for a rank inside an operation, which one and where, e.g. "_all_gather_base #42 on tp"; empty
   *     otherwise
   * @param ranks sorted global ranks
   */
  public record RankGroup(State state, String at, List<Integer> ranks) {
    public RankGroup {
      Objects.requireNonNull(state, "state");
      Objects.requireNonNull(at, "at");
      if (state.inOperation() == at.isEmpty()) {
        throw new IllegalArgumentException(state.inOperation() ? "state '" + state.label() + "' needs an operation"
            : "state '" + state.label() + "' takes no operation, got '" + at + "'");
      }
      ranks = List.copyOf(ranks);
    }

    /** As reports write it: "lost", "waiting in _all_gather_base #42 on tp", … */
    public String label() {
      return state.label() + at;
    }

    /**
     * The group a report wrote as {@code label}.
     *
     * @throws IllegalArgumentException naming the label when it is none of the {@link State}s
     */
    public static RankGroup parse(String label, List<Integer> ranks) {
      for (State s : State.values()) {
        if (s.inOperation() ? label.startsWith(s.label()) && label.length() > s.label().length()
            : label.equals(s.label())) {
          return new RankGroup(s, label.substring(s.label().length()), ranks);
        }
      }
      throw new IllegalArgumentException("unknown rank state '" + label + "'");
    }
  }

  /** Where a group of ranks is, as reports word it. */
  public enum State {
    /** Nothing is known of the rank. */
    NO_EVIDENCE("no evidence", false),
    /** Its stream ended without a goodbye. */
    LOST("lost", false),
    /** Its device started an operation that has not completed. */
    WAITING("waiting in ", true),
    /** It issued an operation its device never started. */
    NOT_STARTED("issued, device not started: ", true),
    /** It issued an operation that never completed; device start events are not recorded. */
    NOT_COMPLETED("issued, not completed: ", true),
    /** Nothing outstanding. */
    IDLE("idle (nothing outstanding)", false);

    private final String label;
    private final boolean inOperation;

    State(String label, boolean inOperation) {
      this.label = label;
      this.inOperation = inOperation;
    }

    /** The words reports use; for a state inside an operation, the words before it. */
    public String label() {
      return label;
    }

    /** True when the state names the operation the ranks are in. */
    public boolean inOperation() {
      return inOperation;
    }
  }
}

package dev.frdiag.analysis;

import static dev.frdiag.analysis.Wording.bare;
import static dev.frdiag.analysis.Wording.capitalize;
import static dev.frdiag.analysis.Wording.plural;
import static dev.frdiag.analysis.Wording.recommendation;
import static dev.frdiag.analysis.Wording.who;

import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * Turns classified stuck operations into one verdict: the preferred cause among the root operations (those that
 * wait on nothing else), its culprits and confidence, the evidence in the order a person should read it, and, with
 * no root at all, no hang, a dead rank before its next collective, or not enough evidence.
 */
final class VerdictRules {
  /**
   * Collectives a waiting rank may have issued past a stuck one before its program counts as having run on
   * without the group. Asynchronous launch lets a rank whose own device or link is stuck issue a few more (a
   * DDP backward issues one all_reduce per bucket); many more means its program never waited on this one.
   */
  static final long RUN_AHEAD = 16;

  /** Consequence collectives named in the cascade evidence; the rest are counted. */
  static final int CASCADE_LISTED = 5;

  private static final Comparator<StuckOp> FIRST_REACHED = Comparator.comparingLong((StuckOp n) -> n.firstCreatedNs)
      .thenComparing(n -> n.group).thenComparingLong(n -> n.seq);

  private final JobIndex index;
  private final StuckOperations stuck;
  private final Rhythm rhythm;
  private final Wording wording;
  private final OneSnapshot snapshot;
  private final CulpritDetails culpritDetails;

  /** What shows where a timed-out collective is held up, in the order it is cheapest to get. */
  static final String MISSING_AFTER_TIMEOUT = "every rank's Flight Recorder dump (TORCH_FR_DUMP_ON_TIMEOUT=1 writes "
      + "it when the watchdog fires), or at least every rank's watchdog lines with their PG status (last enqueued "
      + "and completed work), and NCCL_DEBUG=INFO logs";

  private static final String ASSUMED_GROUP = "the lines name no process group; they were taken to be one group "
      + "because their seqs are close. What would name it: ";

  /** What confirms that ranks' lines are about one process group. */
  static final String NAMES_THE_GROUP = "the ranks' PG status lines (PyTorch 2.4 and later print the group on "
      + "every watchdog line) or their Flight Recorder dumps";

  VerdictRules(JobIndex index, StuckOperations stuck, Rhythm rhythm) {
    this.index = index;
    this.stuck = stuck;
    this.rhythm = rhythm;
    this.wording = new Wording(index);
    this.snapshot = new OneSnapshot(index, stuck, rhythm);
    this.culpritDetails = new CulpritDetails(index, stuck);
  }

  /**
   * The diagnosis.
   *
   * @param mismatches the signature check's findings, whose culprits are already suspects of their operations
   * @param jobEvidence facts about the whole job (rank events), listed after those about operations
   */
  Diagnosis verdict(List<SignatureCheck.Mismatch> mismatches, List<Evidence> jobEvidence) {
    Diagnosis rhythmic = withinRhythm(jobEvidence);
    if (rhythmic != null) {
      return rhythmic;
    }
    // Roots that wait on nothing else come first: a collective some of whose members are stuck elsewhere
    // is at best a second symptom of the same fault. Then the one the job reached first.
    List<StuckOp> roots = stuck.all().stream().filter(StuckOp::isRoot)
        .sorted(Comparator.comparing((StuckOp n) -> !n.blockedBy().isEmpty()).thenComparing(FIRST_REACHED))
        .toList();
    if (roots.isEmpty()) {
      return withoutRoot(jobEvidence);
    }
    List<Evidence> evidence = new ArrayList<>();
    Cause cause = preferred(roots);
    List<StuckOp> causal = roots.stream().filter(n -> n.suspected(cause)).toList();
    Set<Integer> culprits = new TreeSet<>();
    causal.forEach(n -> culprits.addAll(n.suspects(cause)));
    StuckOp primary = causal.get(0);
    if (cause == Cause.MISMATCH) {
      mismatches.forEach(m -> evidence.add(m.evidence()));
    }
    evidence.addAll(wording.describe(primary));
    evidence.addAll(PythonStacks.evidence(index, stuck, cause, culprits));
    List<StuckOp> alsoHeld = causal.subList(1, causal.size());
    if (!alsoHeld.isEmpty()) {
      // The same culprits hold up more collectives: one line, not a repeat of the story per collective.
      Set<Integer> waiters = new TreeSet<>();
      alsoHeld.forEach(n -> waiters.addAll(n.in(MemberState.WAITING)));
      int more = alsoHeld.size() - CASCADE_LISTED;
      evidence.add(new Evidence(Evidence.Kind.ALSO_HELD_UP, List.copyOf(culprits),
          capitalize(who(List.copyOf(culprits)))
          + " also hold" + (culprits.size() == 1 ? "s" : "") + " up " + listed(alsoHeld)
          + (more > 0 ? " and " + more + " more" : "")
          + (waiters.isEmpty() ? "" : ", where " + who(List.copyOf(waiters)) + " wait")));
    }
    for (StuckOp n : roots) {
      if (!causal.contains(n)) {
        evidence.addAll(wording.describe(n));
      }
    }
    List<StuckOp> consequences = stuck.all().stream().filter(n -> !n.isRoot()).sorted(FIRST_REACHED).toList();
    if (!consequences.isEmpty()) {
      Set<Integer> waiters = new TreeSet<>();
      consequences.forEach(n -> {
        waiters.addAll(n.in(MemberState.WAITING));
        waiters.addAll(n.in(MemberState.ISSUED));
      });
      waiters.removeAll(culprits);
      int more = consequences.size() - CASCADE_LISTED;
      evidence.add(new Evidence(Evidence.Kind.CASCADE, List.copyOf(waiters), consequences.size()
          + " other collective" + (consequences.size() == 1 ? "" : "s") + " (" + listed(consequences)
          + (more > 0 ? " and " + more + " more" : "") + ") wait only because some of their members are stuck "
          + "behind the root cause" + (waiters.isEmpty() ? ""
              : "; " + who(List.copyOf(waiters)) + " wait there as a consequence")));
    }
    List<Integer> silent = silent();
    if (!silent.isEmpty()) {
      evidence.add(new Evidence(Evidence.Kind.NO_SNAPSHOT, silent,
          "no fresh snapshot from ranks " + Ranks.compact(silent)));
    }
    evidence.addAll(jobEvidence);
    List<Integer> culpritList = List.copyOf(culprits);
    if (isAssumed(primary)) {
      // The matcher compared ranks' lines as one group only because their seqs are close: the best reading, not
      // a finding, until something names the group.
      evidence.add(new Evidence(Evidence.Kind.INSUFFICIENT, culpritList, ASSUMED_GROUP + NAMES_THE_GROUP));
      return diagnosis(Verdict.INSUFFICIENT_EVIDENCE, cause.symptom, List.of(), primary, 0.3, evidence,
          "Probably: " + wording.headline(cause, culpritList, primary), "Collect more evidence: "
              + NAMES_THE_GROUP + ". Meanwhile: " + recommendation(cause.symptom));
    }
    double confidence = confidence(cause, culpritList, primary);
    if (cause == Cause.CPU) {
      confidence = Math.min(confidence, snapshot.cpuStall(primary, culpritList, evidence));
    }
    return diagnosis(Verdict.HANG, cause.symptom, culpritList, primary, confidence,
        evidence, wording.headline(cause, culpritList, primary), recommendation(cause.symptom));
  }

  /**
   * The cause the verdict names: the first in {@link Cause}'s order among the roots, except that a CPU stall yields
   * to a rank that left no evidence when every CPU suspect is in a group whose members were taken from records.
   * Such members cannot show a rank that recorded nothing: the rank that left no evidence may share a group with
   * the one that never issued the op and hold it up there.
   */
  private Cause preferred(List<StuckOp> roots) {
    Cause cause = roots.stream().flatMap(n -> n.causes().stream()).min(Comparator.naturalOrder()).orElseThrow();
    boolean hiddenMember = cause == Cause.CPU && roots.stream().anyMatch(n -> n.suspected(Cause.NO_EVIDENCE))
        && roots.stream().filter(n -> n.suspected(Cause.CPU)).flatMap(n -> n.suspects(Cause.CPU).stream())
            .allMatch(this::inGroupOfRecordedMembers);
    return hiddenMember ? Cause.NO_EVIDENCE : cause;
  }

  /** Whether one of the groups {@code rank} records has its members from records only (gloo, §2). */
  private boolean inGroupOfRecordedMembers(int rank) {
    RankIndex r = index.rank(rank);
    return r != null && r.evidence.groups().stream().anyMatch(ProcessGroup::getMembersFromRecords);
  }

  /** No operation's own members explain it: no hang, a rank died before its next collective, or too little. */
  private Diagnosis withoutRoot(List<Evidence> jobEvidence) {
    List<Evidence> evidence = new ArrayList<>();
    if (index.ranks.isEmpty()) {
      evidence.addAll(jobEvidence);
      evidence.add(new Evidence(Evidence.Kind.INSUFFICIENT, List.of(), "no rank's records, dump or watchdog line"));
      return diagnosis(Verdict.INSUFFICIENT_EVIDENCE, Symptom.UNKNOWN, List.of(), null, 0.3, evidence,
          "Nothing here says how the ranks stand: no Flight Recorder dump, no watchdog line.",
          "Collect the ranks' Flight Recorder dumps (fr-diagnose analyze <folder>) or training logs.");
    }
    Diagnosis order = programOrder(jobEvidence);
    if (order != null) {
      return order;
    }
    StuckOp unseen = stuck.all().stream().filter(StuckOp::hasUnseenMember).min(FIRST_REACHED).orElse(null);
    if (unseen != null) {
      // Its members here all wait in it: a member the evidence does not hold holds it up (§4, "Members the
      // evidence cannot show").
      evidence.addAll(wording.describe(unseen));
      evidence.addAll(jobEvidence);
      String missing = "the dumps of every rank of the job (the group's members are known only from the ranks "
          + "that left one), or the job's world size (--world-size) to name the ranks that left none";
      evidence.add(new Evidence(Evidence.Kind.INSUFFICIENT, List.of(), missing));
      return diagnosis(Verdict.HANG, Symptom.UNKNOWN, List.of(), unseen, 0.4, evidence,
          capitalize(who(unseen.in(MemberState.WAITING))) + " wait" + (unseen.in(MemberState.WAITING).size() == 1
              ? "s" : "") + " in " + unseen.label() + ", held up by a member of its group that left no evidence "
              + "here.", "Collect more evidence: " + missing + ".");
    }
    List<Integer> lost = index.ranks.keySet().stream().filter(index::isLost).toList();
    List<Integer> cudaErrors = reported(RankEvent.Kind.CUDA_ERROR);
    List<Integer> lateWatchdog = lateWatchdog();
    StuckOp first = stuck.all().stream().min(FIRST_REACHED).orElse(null);
    if (lost.isEmpty() && (!cudaErrors.isEmpty() || !lateWatchdog.isEmpty()) && first != null) {
      // Where the job stands comes first; what a rank said about itself then says why.
      evidence.addAll(wording.describe(first));
    }
    List<Integer> checkerMismatch = reported(RankEvent.Kind.COLLECTIVE_MISMATCH);
    if (!checkerMismatch.isEmpty()) {
      // PyTorch's collective checker compared the ranks' fingerprints and found them different: a program
      // mismatch by its own check. Every rank whose fingerprint differs raises, so the ranks that said so are
      // the ones that saw it, not necessarily the ones that diverged: no culprit.
      evidence.addAll(jobEvidence);
      evidence.add(0, new Evidence(Evidence.Kind.SIGNATURE_MISMATCH, checkerMismatch, capitalize(who(checkerMismatch))
          + " reported that PyTorch's collective checker found " + (checkerMismatch.size() == 1 ? "its" : "their")
          + " collective different from a peer's (op, shape or dtype)"));
      return diagnosis(Verdict.HANG, Symptom.MISMATCH, List.of(), first, 0.6, evidence,
          "PyTorch's collective checker found ranks running different collectives: a program mismatch.",
          recommendation(Symptom.MISMATCH));
    }
    if (lost.isEmpty() && !cudaErrors.isEmpty()) {
      // The rank's own process reported its device failing and no operation's members name another cause; peers
      // that time out wait on it. Read from a log line or an event, not from the rank's records: short of certain.
      evidence.addAll(jobEvidence);
      return diagnosis(Verdict.HANG, Symptom.GPU_STALL, cudaErrors, first, 0.7, evidence,
          capitalize(who(cudaErrors)) + " reported a CUDA error: GPU fault; peers that time out wait on "
              + (cudaErrors.size() == 1 ? "it" : "them") + ".", recommendation(Symptom.GPU_STALL));
    }
    if (lost.isEmpty() && !lateWatchdog.isEmpty()) {
      // A timeout noticed hours past its deadline was noticed by a watchdog that had stopped running: the host
      // stalled the thread (or it was blocked in a CUDA/NCCL call) before anything could be diffed.
      evidence.addAll(jobEvidence);
      return diagnosis(Verdict.HANG, Symptom.WATCHDOG_STUCK, List.of(), first, 0.4, evidence,
          "The watchdog of " + who(lateWatchdog) + " noticed its collective timeout far past the deadline: the "
              + "watchdog thread had stopped running (a host-side stall, or blocked in a CUDA or NCCL call).",
          recommendation(Symptom.WATCHDOG_STUCK));
    }
    if (stuck.isEmpty() && lost.isEmpty()) {
      evidence.addAll(jobEvidence);
      List<Integer> timedOut = reported(RankEvent.Kind.WATCHDOG_TIMEOUT);
      List<Integer> watchdogStuck = reported(RankEvent.Kind.WATCHDOG_STUCK);
      List<Integer> idle = idleWhenSignalled();
      if (!timedOut.isEmpty() && !idle.isEmpty()) {
        // Told of a timeout while nothing was outstanding: every other rank of a hung job waits inside a
        // collective; one that is outside them all never issued the one its peers wait in.
        evidence.add(0, new Evidence(Evidence.Kind.NOT_ISSUED, idle, capitalize(who(idle)) + " had nothing "
            + "outstanding (last enqueued = last completed) when a peer's collective timeout was signalled: "
            + (idle.size() == 1 ? "it" : "they") + " never issued the collective the peers wait in, if that "
            + "collective is on the group " + (idle.size() == 1 ? "it" : "they") + " reported"));
        return diagnosis(Verdict.HANG, Symptom.CPU_STALL, idle, null, 0.4, evidence,
            capitalize(who(idle)) + " had no collective outstanding when a peer timed out: CPU-side stall.",
            recommendation(Symptom.CPU_STALL));
      }
      if (!timedOut.isEmpty()) {
        // PyTorch's watchdog fired: the job hung whatever else the evidence lacks. Without the stuck operation's
        // members there is nothing to diff, so say what would show it rather than guess.
        evidence.add(new Evidence(Evidence.Kind.INSUFFICIENT, timedOut, MISSING_AFTER_TIMEOUT));
        return diagnosis(Verdict.INSUFFICIENT_EVIDENCE, Symptom.UNKNOWN, List.of(), null, 0.3, evidence,
            capitalize(who(timedOut)) + " timed out in a collective, but the evidence does not show which "
                + "member held it up.", "Collect more evidence: " + MISSING_AFTER_TIMEOUT + ".");
      }
      if (!watchdogStuck.isEmpty()) {
        // The watchdog thread itself stopped (ProcessGroupNCCL's heartbeat monitor), with no collective timeout
        // before it: the thread is blocked in a CUDA or NCCL call, which no diff of collectives explains.
        return diagnosis(Verdict.HANG, Symptom.WATCHDOG_STUCK, List.of(), null, 0.4, evidence,
            "The watchdog of " + who(watchdogStuck) + " is stuck and no collective timed out before it: the "
                + "watchdog thread is blocked in a CUDA or NCCL call.", recommendation(Symptom.WATCHDOG_STUCK));
      }
      boolean progress = index.ranks.values().stream().anyMatch(r -> !r.evidence.records().isEmpty()
          || !r.evidence.progress().isEmpty());
      boolean anything = progress || index.ranks.values().stream().anyMatch(r -> !r.evidence.events().isEmpty());
      if (!anything) {
        // Nothing was seen at all (pipes nobody reads, dumps never written): "no hang" would rest on absence.
        List<Integer> silent = index.ranks.keySet().stream().sorted().toList();
        evidence.add(new Evidence(Evidence.Kind.INSUFFICIENT, silent, "no rank sent records, progress or events "
            + "(" + Ranks.compact(silent) + ")"));
        return diagnosis(Verdict.INSUFFICIENT_EVIDENCE, Symptom.UNKNOWN, List.of(), null, 0.2, evidence,
            "No rank sent any records or progress: there is nothing to judge a hang by.",
            "Check that the ranks record (TORCH_FR_BUFFER_SIZE) and that their dumps or pipes are where the "
                + "agent looks.");
      }
      double sure = snapshot.noHang(progress ? 0.9 : 0.4, evidence);
      List<Integer> silent = silent();
      if (!silent.isEmpty()) {
        // "Every group makes progress" speaks for the ranks whose evidence is here: a rank that left none may be
        // where the job stopped (a process that crashed writes no dump).
        evidence.add(new Evidence(Evidence.Kind.NO_SNAPSHOT, silent, "No evidence from " + who(silent)
            + ": where " + (silent.size() == 1 ? "it stands" : "they stand") + " is unknown"));
        sure = Math.min(sure, 0.5);
      }
      return diagnosis(Verdict.NO_HANG, Symptom.NONE, List.of(), null, sure, evidence,
          "No hang: every process group with work is making progress.", "Nothing to do.");
    }
    if (stuck.isEmpty()) {
      evidence.add(new Evidence(Evidence.Kind.RANK_LOST, lost, "ranks " + Ranks.compact(lost)
          + " disconnected without saying goodbye; no collective is stuck yet"));
      evidence.addAll(jobEvidence);
      return diagnosis(Verdict.HANG, Symptom.DEAD_RANK, lost, null, 0.8, evidence,
          "Rank" + plural(lost) + " " + bare(lost) + " died; the job will hang at its next collective.",
          recommendation(Symptom.DEAD_RANK));
    }
    List<Integer> silent = silent();
    evidence.addAll(wording.describe(first));
    evidence.addAll(PythonStacks.evidence(index, stuck, null, List.of()));
    evidence.addAll(jobEvidence);
    String missing = first.isAllIssuedNoneStarted()
        ? "every member issued it and none completed, but the ranks do not record device start events, so a "
            + "GPU stall cannot be told from a fabric fault: enable start events (TORCH_NCCL_ENABLE_TIMING=1) "
            + "or add NCCL logs / InfiniBand counters"
        : "the members that could explain it sent no usable evidence" + (silent.isEmpty() ? ""
            : " (no snapshot from ranks " + Ranks.compact(silent) + ")");
    long runAhead = runAhead(first);
    if (first.isAllIssuedNoneStarted() && runAhead >= RUN_AHEAD) {
      // A waiting rank whose program went on to issue many more collectives on the group was not held up by
      // its own device or CPU: its peers' programs stopped short of this one.
      List<Integer> ahead = first.states.keySet().stream().filter(r -> runAheadOf(r, first) >= RUN_AHEAD)
          .toList();
      evidence.add(new Evidence(Evidence.Kind.RAN_AHEAD, ahead, capitalize(who(ahead)) + " issued " + first.label()
          + " and " + runAhead + " more collectives on " + first.group.name() + " after it while none "
          + "completed: " + (ahead.size() == 1 ? "its" : "their") + " program ran on, so "
          + (ahead.size() == 1 ? "it is" : "they are") + " not the culprit; a member that never issued it is"
          + (silent.isEmpty() ? " (its evidence is not here)" : "")));
      if (isAssumed(first)) {
        evidence.add(new Evidence(Evidence.Kind.INSUFFICIENT, List.of(), ASSUMED_GROUP + NAMES_THE_GROUP));
        return diagnosis(Verdict.INSUFFICIENT_EVIDENCE, Symptom.CPU_STALL, List.of(), first, 0.3, evidence,
            "Probably: " + capitalize(who(ahead)) + " ran " + runAhead + " collectives past " + first.label()
                + ", which never completed: a peer never issued it.", "Collect more evidence: " + NAMES_THE_GROUP
                + ". Meanwhile: " + recommendation(Symptom.CPU_STALL));
      }
      return diagnosis(Verdict.HANG, Symptom.CPU_STALL, List.of(), first, 0.5, evidence,
          capitalize(who(ahead)) + " ran " + runAhead + " collectives past " + first.label()
              + ", which never completed: a peer never issued it (CPU side or a program divergence), so "
              + who(ahead) + (ahead.size() == 1 ? " is" : " are") + " not the culprit.",
          recommendation(Symptom.CPU_STALL));
    }
    evidence.add(new Evidence(Evidence.Kind.INSUFFICIENT, List.of(), missing));
    return diagnosis(Verdict.INSUFFICIENT_EVIDENCE, Symptom.UNKNOWN, List.of(), first, 0.3, evidence,
        "The job is stuck in " + first.label() + " but the evidence does not say why: " + missing + ".",
        "Collect more evidence: " + missing + ".");
  }

  /**
   * No hang, when every operation that looks stuck was observed waiting for less than a few of its group's usual
   * intervals (DIAGNOSIS.md §3, "The job's rhythm"): dumps of a running job catch its ranks inside collectives for
   * milliseconds, and a wait that short is the job's own rhythm, not a hang. Null when some wait is longer or
   * unknown, or a rank reported a timeout, an error or its loss: those are judged by the rules below.
   */
  private Diagnosis withinRhythm(List<Evidence> jobEvidence) {
    if (index.ranks.values().stream().anyMatch(r -> !r.evidence.events().isEmpty()
        || r.evidence.liveness() == Liveness.LOST || r.evidence.liveness() == Liveness.UNRESPONSIVE)) {
      return null;
    }
    Evidence longest = snapshot.withinRhythm();
    if (longest == null) {
      return null;
    }
    List<Evidence> evidence = new ArrayList<>(List.of(longest));
    evidence.addAll(jobEvidence);
    List<Integer> silent = silent();
    if (!silent.isEmpty()) {
      evidence.add(new Evidence(Evidence.Kind.NO_SNAPSHOT, silent, "No evidence from " + who(silent)));
    }
    return diagnosis(Verdict.NO_HANG, Symptom.NONE, List.of(), null, silent.isEmpty() ? 0.6 : 0.5, evidence,
        "No hang shown: every rank caught inside a collective had waited there within the job's own rhythm.",
        "Nothing to do. If the job does hang, its dumps taken after the wait (the watchdog's, or a second set "
            + "seconds later) show it.");
  }


  /**
   * A program-order divergence (DIAGNOSIS.md §4, "Who waits for whom"): with no operation explained by its own
   * members, ranks that wait for each other, each in a collective the other has not issued, issued collectives in
   * different orders or counts. The culprits are the fewest ranks that take part in every such wait: the one rank of
   * a `if rank == 0: dist.all_reduce(...)` waits with each peer, the peers not with each other. With one such pair
   * alone, either rank may be the one that diverged. Null when no two ranks wait for each other.
   */
  private Diagnosis programOrder(List<Evidence> jobEvidence) {
    WaitGraph.Divergence divergence = WaitGraph.of(stuck).divergence();
    if (divergence == null) {
      return null;
    }
    List<Integer> culprits = divergence.culprits();
    List<Evidence> evidence = new ArrayList<>(divergence.evidence());
    evidence.addAll(jobEvidence);
    return diagnosis(Verdict.HANG, Symptom.MISMATCH, culprits, divergence.primary(), divergence.sure() ? 0.9 : 0.6,
        evidence, capitalize(who(culprits)) + " issued " + divergence.primary().label() + " while "
            + (!divergence.sure() ? "the others" : culprits.size() == 1 ? "its peers" : "their peers")
            + " wait in collectives " + (culprits.size() == 1 ? "it has" : "they have") + " not issued: the ranks "
            + "issued collectives in different orders or counts (program bug).",
        "Fix the program: find the collective the culprit issues where its peers issue another (a rank-dependent "
            + "branch, an early exit, a loop of another length); its Python stack (py-spy dump) shows the line.");
  }

  /** True when {@code n}'s group is one the evidence did not name, only assumed (§8 of the rulebook). */
  private boolean isAssumed(StuckOp n) {
    ProcessGroup group = index.groups.get(n.group);
    return group != null && group.getAssumed();
  }

  /** Ranks whose watchdog noticed a timeout far past its deadline: a stuck event tied to a timeout's seq. */
  private List<Integer> lateWatchdog() {
    return index.ranks.values().stream().filter(r -> r.evidence.events().stream().anyMatch(
        stuck -> stuck.getKind() == RankEvent.Kind.WATCHDOG_STUCK && stuck.getSeq() > 0
            && r.evidence.events().stream().anyMatch(t -> t.getKind() == RankEvent.Kind.WATCHDOG_TIMEOUT
                && t.getSeq() == stuck.getSeq()))).map(RankIndex::rank).sorted().toList();
  }

  /**
   * Ranks told of a collective timeout (a dump signal, or the status a timeout prints) while nothing was
   * outstanding on the group they reported: last enqueued = last completed, no incomplete record.
   */
  private List<Integer> idleWhenSignalled() {
    List<Integer> idle = index.ranks.values().stream().filter(r -> r.oldestIncomplete == null && r.evidence.events()
        .stream().anyMatch(VerdictRules::idleAtSignal)).map(RankIndex::rank).sorted().toList();
    List<Integer> timedOut = index.ranks.values().stream().filter(r -> r.evidence.events().stream()
        .anyMatch(e -> e.getKind() == RankEvent.Kind.WATCHDOG_TIMEOUT && e.getOwnTimeout())).map(RankIndex::rank)
        .toList();
    if (timedOut.stream().anyMatch(idle::contains)) {
      // A rank whose own collective timed out is inside it; idle on the group its dump signal counts (PG 0's
      // heartbeat monitor prints it whatever group timed out), it says the stuck collective is on another group,
      // where nobody's counters here are: no rank's idleness points at a culprit.
      return List.of();
    }
    return idle;
  }

  /** A dump signal or status line read while the rank had nothing outstanding on the group it counts. */
  private static boolean idleAtSignal(RankEvent e) {
    return e.getKind() == RankEvent.Kind.WATCHDOG_TIMEOUT && e.getLastEnqueuedSeq() > 0
        && e.getLastEnqueuedSeq() == e.getLastCompletedSeq();
  }

  /** Ranks that reported an event of {@code kind}, sorted. */
  private List<Integer> reported(RankEvent.Kind kind) {
    return index.ranks.values().stream().filter(r -> r.evidence.events().stream().anyMatch(e -> e.getKind() == kind))
        .map(RankIndex::rank).sorted().toList();
  }

  /** Ranks with no fresh snapshot that are not known to be lost. */
  private List<Integer> silent() {
    List<Integer> silent = new ArrayList<>();
    for (int rank = 0; rank < index.job.worldSize(); rank++) {
      RankIndex r = index.rank(rank);
      if (r == null || !r.evidence.answered() && r.evidence.liveness() != Liveness.LOST) {
        silent.add(rank);
      }
    }
    return silent;
  }

  private static String listed(List<StuckOp> ops) {
    return ops.stream().limit(CASCADE_LISTED).map(StuckOp::label).collect(Collectors.joining(", "));
  }

  private double confidence(Cause cause, List<Integer> culprits, StuckOp primary) {
    return switch (cause) {
      case MISMATCH -> culprits.size() < primary.states.size() ? 0.95 : 0.6;
      case DEAD -> culprits.stream().allMatch(index::isLost) ? 0.95 : 0.7;
      case DEVICE_ERROR -> 0.95;
      case CPU -> 0.9;
      case WEDGED -> 0.7;
      case GPU -> primary.in(MemberState.WAITING).isEmpty() ? 0.7 : 0.85;
      case NO_EVIDENCE -> 0.6;
      case WATCHDOG -> 0.6;
      case FABRIC -> 0.6;
    };
  }

  private long runAhead(StuckOp n) {
    return n.states.keySet().stream().mapToLong(r -> runAheadOf(r, n)).max().orElse(0);
  }

  private long runAheadOf(int rank, StuckOp n) {
    RankIndex.Track t = index.track(rank, n.group);
    if (t == null || n.p2p) {
      return 0;
    }
    return Math.max(0, t.enqueued - n.seq);
  }

  private Diagnosis diagnosis(Verdict verdict, Symptom symptom, List<Integer> culprits, StuckOp primary,
      double confidence, List<Evidence> evidence, String headline, String recommendation) {
    List<StuckCollective> stuckCollectives = stuck.all().stream()
        .sorted(StuckOp.ROOTS_FIRST)
        .map(n -> new StuckCollective(n.ref, n.isRoot(), n.in(MemberState.DONE), n.in(MemberState.WAITING),
            n.in(MemberState.ISSUED), n.in(MemberState.NOT_ISSUED), n.in(MemberState.UNKNOWN),
            List.copyOf(n.blockedBy())))
        .toList();
    List<String> hosts = culprits.stream().map(index::host).filter(h -> !h.equals("?")).distinct().sorted()
        .toList();
    List<Culprit> details = culpritDetails.of(culprits, primary, symptom);
    long since = primary == null || primary.firstCreatedNs == Long.MAX_VALUE ? 0 : primary.firstCreatedNs;
    return new Diagnosis(verdict, symptom, culprits, hosts, primary == null ? null : primary.ref, confidence,
        evidence, details, stuckCollectives, RankStates.of(index), headline, recommendation, since);
  }
}

package dev.frdiag.analysis;

import static dev.frdiag.analysis.ContextRules.quote;
import static dev.frdiag.analysis.ContextRules.rewrite;
import static dev.frdiag.analysis.NodeFindings.hosts;

import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.util.ArrayList;
import java.util.List;

/**
 * What a job's node findings add to a verdict when none of {@link ContextRules}' rules decides it: they are quoted
 * after the evidence it rests on, with a word that the NCCL logs show no failure when none of them is a fault. Two
 * cases change the verdict all the same: nothing from the ranks and logs that show the run going on or ending is no
 * hang, and error counters that never moved take a fabric verdict's link and confidence away.
 */
final class QuotedContext {
  private QuotedContext() {}

  /** {@code d} with the findings of {@code f} no rule weighed. */
  static Diagnosis apply(Diagnosis d, JobEvidence job, NodeFindings f) {
    List<Evidence> extra = quotedAlongside(d, job, f);
    Diagnosis out = noSignOfHang(d, job, f, extra);
    if (out == null) {
      out = quietCounters(d, f, extra);
    }
    return out != null ? out : withContext(d, extra);
  }

  /**
   * The findings no rule weighed, quoted to go with the verdict; first, when none of them is a fault, that the NCCL
   * logs show no failure.
   */
  private static List<Evidence> quotedAlongside(Diagnosis d, JobEvidence job, NodeFindings f) {
    List<Evidence> extra = new ArrayList<>();
    extra.addAll(quote(Evidence.Kind.DEAD_PEER, f.dead, job));
    extra.addAll(quote(Evidence.Kind.PROCESS_DIED, f.died, job));
    extra.addAll(quote(Evidence.Kind.GPU_XID, f.xid, job));
    extra.addAll(quote(Evidence.Kind.LAUNCH_LAG, f.lag, job));
    extra.addAll(quote(Evidence.Kind.PEER_PATH_ERROR, f.peerPath, job));
    extra.addAll(quote(Evidence.Kind.RAS_CONSISTENT, f.consistent, job));
    extra.addAll(quote(Evidence.Kind.CONGESTION, f.of(ContextFinding.Kind.CONGESTION), job));
    extra.addAll(quote(Evidence.Kind.NOTE, f.of(ContextFinding.Kind.COLLECTIVE_FAILED), job));
    extra.addAll(quote(Evidence.Kind.NOTE, f.of(ContextFinding.Kind.NOTE), job));
    // Only a node's NCCL log or counters can show it without failure: a training log's notes, steps or tracebacks
    // say nothing of NCCL's warnings.
    boolean ncclRead = job.context().stream().anyMatch(n -> n.getNicsCount() > 0 || n.getFindingsList().stream()
        .anyMatch(x -> x.getKind() != ContextFinding.Kind.PROGRESS
            && x.getKind() != ContextFinding.Kind.COLLECTIVE_FAILED));
    if (!f.faults() && ncclRead) {
      List<String> hosts = job.context().stream().map(NodeContext::getHostname).filter(h -> !h.isEmpty())
          .distinct().sorted().toList();
      extra.add(0, new Evidence(Evidence.Kind.NO_FAILURE_LOGGED, List.of(), "The NCCL logs" + (hosts.isEmpty() ? ""
          : " of " + String.join(", ", hosts)) + " show no failure (no WARN that points at a GPU, NIC or link)"));
    }
    return extra;
  }

  /**
   * Nothing from the ranks, every node's NCCL log free of trouble, and something that shows the run going on, or
   * every node's communicators torn down: no hang. Set-up lines alone show neither (a job that hangs at its first
   * collective prints the same), so they leave the verdict undecided.
   */
  private static Diagnosis noSignOfHang(Diagnosis d, JobEvidence job, NodeFindings f, List<Evidence> extra) {
    if (f.faults() || !job.ranks().isEmpty() || d.verdict() != Verdict.INSUFFICIENT_EVIDENCE
        || !job.context().stream().allMatch(n -> n.getFindingsList().stream()
            .anyMatch(x -> x.getKind() == ContextFinding.Kind.HEALTHY_SETUP
                || x.getKind() == ContextFinding.Kind.PROGRESS))) {
      return null;
    }
    List<ContextFinding> completed = job.context().stream().flatMap(n -> n.getFindingsList().stream())
        .filter(x -> x.getKind() == ContextFinding.Kind.PROGRESS).toList();
    if (!completed.isEmpty()) {
      // Collectives that ran to the end with checked results, or steps advancing, are progress seen, not only
      // trouble unseen.
      return rewrite(d, Verdict.NO_HANG, Symptom.NONE, List.of(), List.of(), 0.5, "No hang: work went on ("
          + completed.get(0).getDetail() + ") and no line reports trouble.", extra, "Nothing to do.");
    }
    if (!job.context().stream().allMatch(n -> n.getFindingsList().stream()
        .anyMatch(x -> x.getKind() == ContextFinding.Kind.CLEAN_TEARDOWN))) {
      // A node whose log shows only its set-up may be where the job stopped.
      return null;
    }
    return rewrite(d, Verdict.NO_HANG, Symptom.NONE, List.of(), List.of(), 0.4, "No sign of a hang: NCCL "
        + "destroyed its communicators the normal way, as a run does at its end, and no line of the logs reports "
        + "trouble; no rank's watchdog line or Flight Recorder dump is here.", extra,
        "If the job did hang, add the ranks' training logs (watchdog lines) or Flight Recorder dumps.");
  }

  /** No error counter moved anywhere we can see: the fabric is not confirmed, so no link is named. */
  private static Diagnosis quietCounters(Diagnosis d, NodeFindings f, List<Evidence> extra) {
    if (d.symptom() != Symptom.FABRIC || f.quiet.isEmpty()) {
      return null;
    }
    extra.add(new Evidence(Evidence.Kind.QUIET_COUNTERS, List.of(), "No InfiniBand error, wait or "
        + "retransmission counter moved on " + String.join(", ", hosts(f.quiet)) + " during the hang: this points "
        + "away from the fabric (check the GPUs and NCCL logs of the members)"));
    return rewrite(d, d.verdict(), d.symptom(), d.culpritRanks(), List.of(), Math.min(d.confidence(), 0.4),
        d.headline(), extra, d.recommendation());
  }

  /** {@code d} with context that changes nothing after the evidence the verdict rests on. */
  private static Diagnosis withContext(Diagnosis d, List<Evidence> extra) {
    if (extra.isEmpty()) {
      return d;
    }
    List<Evidence> after = new ArrayList<>(d.evidence());
    after.addAll(extra);
    return new Diagnosis(d.verdict(), d.symptom(), d.culpritRanks(), d.culpritHosts(), d.collective(),
        d.confidence(), after, d.culprits(), d.stuck(), d.rankStates(), d.headline(), d.recommendation(),
        d.stuckSinceNs());
  }
}

package dev.frdiag.testing.sim;

import java.time.Duration;
import java.util.Objects;

/**
 * One injected hang: what goes wrong, on which rank, at which training step (0-based).
 *
 * <p>When the fault triggers at step {@code F}:
 *
 * <ul>
 *   <li>{@link FaultKind#CPU_STALL}: {@code rank} issues nothing of step F or later; its recorder keeps what it
 *       issued before.
 *   <li>{@link FaultKind#GPU_STALL}: {@code rank} issues every op of step F, but its device starts none of them
 *       (they stay SCHEDULED).
 *   <li>{@link FaultKind#FABRIC}: every rank issues and starts the world all_reduce of step F and none
 *       completes it. No rank is at fault in the records; when the simulator plays the node agents
 *       ({@code RankSimulator.Builder.nodeAgents}), {@code rank}'s host reports the InfiniBand counters of
 *       {@code rank}'s NIC port going down.
 *   <li>{@link FaultKind#MISMATCH}: {@code rank} issues the data-parallel all_reduce of step F with its first
 *       dimension halved; nobody in that data-parallel group completes it.
 *   <li>{@link FaultKind#DEAD_RANK}: {@code rank}'s process dies at the start of step F: its reporter is killed
 *       (no Goodbye) and it issues nothing more.
 *   <li>{@link FaultKind#SLOW}: no hang; from step F on, {@code rank} issues each step {@code delay} after it could
 *       (its peers issue theirs and wait inside the step's collectives for it): a straggler.
 * </ul>
 *
 * <p>Everything queued behind a stuck op stays SCHEDULED, and since every rank waits for its own step to finish
 * before issuing the next one (like {@code loss.item()}), the whole job stops within the step.
 *
 * @param kind what goes wrong
 * @param rank the faulty rank (0 for {@link FaultKind#NONE}); for {@link FaultKind#FABRIC}, the rank whose NIC
 *     port fails
 * @param atStep the 0-based training step at which it goes wrong
 * @param delay for {@link FaultKind#SLOW}, how late the rank issues each step; zero otherwise
 */
public record Fault(FaultKind kind, int rank, long atStep, Duration delay) {
  private static final Fault NONE = new Fault(FaultKind.NONE, 0, 0);

  /** A fault with no delay. */
  public Fault(FaultKind kind, int rank, long atStep) {
    this(kind, rank, atStep, Duration.ZERO);
  }

  /**
   * @throws IllegalArgumentException if {@code rank} or {@code atStep} is negative
   */
  public Fault {
    Objects.requireNonNull(kind, "kind");
    if (rank < 0) {
      throw new IllegalArgumentException("fault rank must not be negative, got " + rank);
    }
    if (atStep < 0) {
      throw new IllegalArgumentException("fault step must not be negative, got " + atStep);
    }
    Objects.requireNonNull(delay, "delay");
    if (delay.isNegative() || kind == FaultKind.SLOW && delay.isZero()) {
      throw new IllegalArgumentException("a slow rank's delay must be positive, got " + delay);
    }
  }

  /** No fault. */
  public static Fault none() {
    return NONE;
  }

  /** {@code rank}'s CPU stops issuing at {@code atStep}. */
  public static Fault cpuStall(int rank, long atStep) {
    return new Fault(FaultKind.CPU_STALL, rank, atStep);
  }

  /** {@code rank}'s device starts nothing from {@code atStep} on. */
  public static Fault gpuStall(int rank, long atStep) {
    return new Fault(FaultKind.GPU_STALL, rank, atStep);
  }

  /** A fabric failure under the world all_reduce of {@code atStep}, on rank 0's link; no rank is at fault. */
  public static Fault fabric(long atStep) {
    return new Fault(FaultKind.FABRIC, 0, atStep);
  }

  /** {@code rank} issues the data-parallel all_reduce of {@code atStep} with a different size. */
  public static Fault mismatch(int rank, long atStep) {
    return new Fault(FaultKind.MISMATCH, rank, atStep);
  }

  /** {@code rank}'s process dies at the start of {@code atStep}. */
  public static Fault deadRank(int rank, long atStep) {
    return new Fault(FaultKind.DEAD_RANK, rank, atStep);
  }

  /** {@code rank} issues every step from {@code atStep} on {@code delay} after it could: a straggler. */
  public static Fault slow(int rank, long atStep, Duration delay) {
    return new Fault(FaultKind.SLOW, rank, atStep, delay);
  }

  /** True when this fault concerns {@code rank} at {@code step} (FABRIC concerns no single rank). */
  boolean hits(FaultKind k, int r, long step) {
    return kind == k && rank == r && atStep == step;
  }
}

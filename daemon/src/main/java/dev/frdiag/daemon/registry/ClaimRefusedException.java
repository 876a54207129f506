package dev.frdiag.daemon.registry;

/**
 * A Hello that would take over what live ranks hold: the same rank of the same job, or the job's shape. Refused
 * rather than obeyed, so that a second stream can neither frame a rank nor lock its job out.
 */
public final class ClaimRefusedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** What the claim collided with. */
  public enum Conflict {
    /** The rank is connected on another stream that is alive. */
    RANK_IN_USE,
    /** Live ranks of the job report another world size. */
    SHAPE_IN_USE
  }

  private final Conflict conflict;

  public ClaimRefusedException(Conflict conflict, String message) {
    super(message);
    this.conflict = conflict;
  }

  public Conflict conflict() {
    return conflict;
  }
}

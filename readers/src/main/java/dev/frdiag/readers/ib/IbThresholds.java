package dev.frdiag.readers.ib;

/**
 * How much a counter must rise within a window to make a finding.
 *
 * <p>Defaults follow the rule of thumb that a hang window is short and the fabric should be silent in it: any
 * rise of a link counter is a lead (ibqueryerrors' effective threshold, since its shipped thresholds file is all
 * commented out), {@code port_xmit_wait} from 1,000 ticks (ibqueryerrors' suggested PortXmitWait), and
 * {@code port_xmit_discards} from 10 (legacy ibdiagnet's delta threshold).
 *
 * <p>Immutable and thread-safe.
 */
final class IbThresholds {
  /** Any rise of {@code link_downed} is a flap. */
  static final long DEFAULT_LINK_DOWNED = 1;
  /** Any rise of a link error counter is a lead. */
  static final long DEFAULT_LINK_ERRORS = 1;
  /** {@code port_xmit_wait} ticks in the window that mean congestion. */
  static final long DEFAULT_XMIT_WAIT = 1_000;
  /** {@code port_xmit_discards} in the window that mean congestion. */
  static final long DEFAULT_XMIT_DISCARDS = 10;
  /** Any rise of a retransmission counter is a lead. */
  static final long DEFAULT_RETRANSMISSIONS = 1;

  private static final IbThresholds DEFAULTS = builder().build();

  private final long linkDowned;
  private final long linkErrors;
  private final long xmitWait;
  private final long xmitDiscards;
  private final long retransmissions;

  private IbThresholds(Builder b) {
    this.linkDowned = b.linkDowned;
    this.linkErrors = b.linkErrors;
    this.xmitWait = b.xmitWait;
    this.xmitDiscards = b.xmitDiscards;
    this.retransmissions = b.retransmissions;
  }

  /** The documented defaults. */
  static IbThresholds defaults() {
    return DEFAULTS;
  }

  /** A builder starting from the defaults. */
  static Builder builder() {
    return new Builder();
  }

  /** Minimum {@code link_downed} rise for LINK_FLAP. */
  long linkDowned() {
    return linkDowned;
  }

  /** Minimum rise of a link error counter for LINK_ERRORS. */
  long linkErrors() {
    return linkErrors;
  }

  /** Minimum {@code port_xmit_wait} rise, in ticks, for CONGESTION. */
  long xmitWait() {
    return xmitWait;
  }

  /** Minimum {@code port_xmit_discards} rise for CONGESTION. */
  long xmitDiscards() {
    return xmitDiscards;
  }

  /** Minimum rise of a retransmission counter for RETRANSMISSION. */
  long retransmissions() {
    return retransmissions;
  }

  /** Builds {@link IbThresholds}; every threshold is a minimum delta and must be positive. */
  static final class Builder {
    private long linkDowned = DEFAULT_LINK_DOWNED;
    private long linkErrors = DEFAULT_LINK_ERRORS;
    private long xmitWait = DEFAULT_XMIT_WAIT;
    private long xmitDiscards = DEFAULT_XMIT_DISCARDS;
    private long retransmissions = DEFAULT_RETRANSMISSIONS;

    private Builder() {}

    /** Sets the minimum {@code link_downed} rise; must be positive. */
    Builder linkDowned(long min) {
      this.linkDowned = positive(min, "linkDowned");
      return this;
    }

    /** Sets the minimum link error rise; must be positive. */
    Builder linkErrors(long min) {
      this.linkErrors = positive(min, "linkErrors");
      return this;
    }

    /** Sets the minimum {@code port_xmit_wait} rise; must be positive. */
    Builder xmitWait(long min) {
      this.xmitWait = positive(min, "xmitWait");
      return this;
    }

    /** Sets the minimum {@code port_xmit_discards} rise; must be positive. */
    Builder xmitDiscards(long min) {
      this.xmitDiscards = positive(min, "xmitDiscards");
      return this;
    }

    /** Sets the minimum retransmission counter rise; must be positive. */
    Builder retransmissions(long min) {
      this.retransmissions = positive(min, "retransmissions");
      return this;
    }

    /** The thresholds set so far. */
    IbThresholds build() {
      return new IbThresholds(this);
    }

    private static long positive(long v, String name) {
      if (v < 1) {
        throw new IllegalArgumentException(name + " threshold must be positive, got " + v);
      }
      return v;
    }
  }
}

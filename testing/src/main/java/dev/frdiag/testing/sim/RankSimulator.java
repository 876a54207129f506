package dev.frdiag.testing.sim;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.collector.recorder.FlightRecorder;
import dev.frdiag.collector.reporter.Reporter;
import dev.frdiag.collector.reporter.ReporterSettings;
import dev.frdiag.proto.FrdiagVersion;
import dev.frdiag.proto.v1.RankIdentity;
import io.grpc.Channel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntFunction;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Simulates a distributed training job in one JVM: every rank records into its own {@link FlightRecorder} and,
 * given a {@link Channel}, streams it to the daemon through its own {@link Reporter}, while an optional
 * {@link Fault} makes the job hang the way real jobs do.
 *
 * <p>One thread drives all ranks step by step (no thread per rank), so thousands of ranks fit on two cores and
 * a run is deterministic for a given clock. Drive it either synchronously with {@link #runSteps} (tests) or in
 * the background with {@link #start} (demos). Accessors are safe from any thread; the recorders' readers may
 * run while the simulation advances.
 *
 * <p>One class with its {@link Builder}: what a simulation holds besides its course is elsewhere (the device model
 * of its ranks in {@code SimulatedJob}, the streams in {@code SimulatedReporters}, the hosts' node agents in
 * {@code SimulatedNodes}). What is left is one concept, a simulation started, driven, stalled and closed under one
 * lock, and the Builder is its validated configuration, nested so that {@link #builder()} is the one way to make
 * one.
 */
public final class RankSimulator implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(RankSimulator.class);

  /** Run until stopped. */
  public static final long DEFAULT_STEPS = Long.MAX_VALUE;
  /** Pause between steps in {@link #start} mode, so a demo looks like training rather than a spin loop. */
  public static final Duration DEFAULT_STEP_INTERVAL = Duration.ofMillis(20);
  /** PyTorch's default process-group timeout, recorded with every op. */
  public static final Duration DEFAULT_COLLECTIVE_TIMEOUT = Duration.ofMinutes(10);
  public static final String DEFAULT_JOB_ID = "frdiag-sim";
  /** Threads shared by all reporters: streaming is I/O-light per rank, and the simulator must fit on 2 cores. */
  public static final int REPORTER_THREADS = 2;

  static final String FRAMEWORK_VERSION = "simulated";
  static final String NCCL_VERSION = "2.27.3";
  static final int PID_BASE = 10_000;
  private static final Duration DRIVER_STOP_TIMEOUT = Duration.ofSeconds(10);
  private static final int MAX_JOB_ID_BYTES = 256;

  private final Topology topology;
  private final Fault fault;
  private final long stepLimit;
  private final long stepIntervalNanos;
  private final LongSupplier clock;
  private final FlightRecorder[] recorders;
  private final RankIdentity[] identities;
  /** Null without a channel. */
  private final SimulatedReporters reporters;
  /** The hosts' node agents; null without a channel or when not asked for. */
  private final SimulatedNodes nodes;
  private final SimulatedJob job;

  // Fair, so a driver running steps back to back cannot starve close() or awaitStalled().
  private final ReentrantLock lock = new ReentrantLock(true);
  /** Signalled when the simulation stalls or finishes, and on close. */
  private final Condition changed = lock.newCondition();
  private final AtomicBoolean closing = new AtomicBoolean();
  @GuardedBy("lock")
  private Thread driver;
  // Written under lock by the driving thread, read without it by accessors on any thread.
  private volatile long stepsCompleted;
  private volatile boolean stalled;
  private volatile boolean finished;

  private RankSimulator(Builder b) {
    this.topology = b.topology;
    this.fault = b.fault;
    this.stepLimit = b.steps;
    this.stepIntervalNanos = b.stepInterval.toNanos();
    int world = topology.worldSize();
    long timeoutMs = b.collectiveTimeout.toMillis();
    recorders = new FlightRecorder[world];
    // All simulated ranks share one driver thread; a strictly increasing clock keeps every issue time distinct
    // and in issue order, as separate processes' clocks would be at the resolution that matters.
    LongSupplier base = b.clock;
    AtomicLong last = new AtomicLong();
    LongSupplier issueClock = () -> {
      long now = base.getAsLong();
      return last.updateAndGet(prev -> Math.max(prev + 1, now));
    };
    identities = new RankIdentity[world];
    for (int r = 0; r < world; r++) {
      recorders[r] = new FlightRecorder(b.recorderCapacity, issueClock, timeoutMs);
      identities[r] = identityOf(b.jobId, r);
    }
    // Groups are registered before any reporter starts, so every Hello carries them, as in a real job where
    // the process groups exist before training begins.
    job = new SimulatedJob(topology, b.workload, fault, recorders, this::onDeath, this::onFabricFault, b.clock);
    clock = b.clock;
    reporters = b.channel == null ? null
        : new SimulatedReporters(recorders, identities, b.rankChannels == null ? r -> b.channel : b.rankChannels,
            b.reporterSettings, b.clock);
    nodes = b.channel == null || !b.nodeAgents ? null : new SimulatedNodes(topology, b.jobId, b.channel);
  }

  /** A builder starting from the defaults: 16 ranks, no fault, no channel. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Starts driving the simulation on one daemon thread, pausing the step interval between steps; it idles
   * once the job stalls or reaches its step limit.
   *
   * @throws IllegalStateException if already started or closed
   */
  public void start() {
    lock.lock();
    try {
      checkOpen();
      if (driver != null) {
        throw new IllegalStateException("the simulator is already running");
      }
      driver = new Thread(this::drive, "frdiag-sim-driver");
      driver.setDaemon(true);
      driver.start();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Runs up to {@code n} steps on the calling thread, as fast as possible; returns early when the job stalls or
   * reaches its step limit.
   *
   * @return the number of steps completed by this call
   * @throws IllegalArgumentException if {@code n} is negative
   * @throws IllegalStateException if {@link #start} was called or the simulator is closed
   */
  public int runSteps(int n) {
    if (n < 0) {
      throw new IllegalArgumentException("steps to run must not be negative, got " + n);
    }
    lock.lock();
    try {
      checkOpen();
      if (driver != null) {
        throw new IllegalStateException("the simulator is driven by its own thread since start()");
      }
      if (fault.kind() == FaultKind.SLOW) {
        throw new IllegalStateException("a slow rank issues its steps late by the clock: run the simulator on its "
            + "own thread (start())");
      }
      long target = Math.min(stepLimit, stepsCompleted + n);
      long before = stepsCompleted;
      while (stepsCompleted < target && !stalled) {
        passLocked();
      }
      return (int) (stepsCompleted - before);
    } finally {
      lock.unlock();
    }
  }

  /** True once a pass over all ranks moved nothing: the job hangs and will not recover. */
  public boolean isStalled() {
    return stalled;
  }

  /**
   * Waits until the job stalls.
   *
   * @return true when it stalled, false when {@code timeout} passed first or the simulator was closed
   * @throws InterruptedException if interrupted while waiting
   */
  public boolean awaitStalled(Duration timeout) throws InterruptedException {
    Objects.requireNonNull(timeout, "timeout");
    long remaining = timeout.toNanos();
    lock.lock();
    try {
      while (!stalled && !closing.get() && remaining > 0) {
        remaining = changed.awaitNanos(remaining);
      }
      return stalled;
    } finally {
      lock.unlock();
    }
  }

  /** Steps every rank has completed (a step ends with the world all_reduce of the loss). */
  public long stepsCompleted() {
    return stepsCompleted;
  }

  public Topology topology() {
    return topology;
  }

  public Fault fault() {
    return fault;
  }

  /** The recorder of {@code rank}; its reader side may be used from any thread. */
  public FlightRecorder recorder(int rank) {
    topology.checkRank(rank);
    return recorders[rank];
  }

  /** The identity {@code rank} reports to the daemon. */
  public RankIdentity identity(int rank) {
    topology.checkRank(rank);
    return identities[rank];
  }

  /**
   * Waits until the daemon has welcomed every rank's reporter, so a run starts with every rank known to it.
   *
   * @return false when the timeout passed first, or when the simulator has no reporters
   */
  public boolean awaitConnected(Duration timeout) throws InterruptedException {
    return reporters != null && reporters.awaitConnected(timeout);
  }

  /** The reporter of {@code rank}; empty when the simulator was built without a channel. */
  public Optional<Reporter> reporter(int rank) {
    topology.checkRank(rank);
    return reporters == null ? Optional.empty() : Optional.of(reporters.reporter(rank));
  }

  /**
   * Stops the driver, closes every reporter that was not killed (they flush and say Goodbye) and the shared
   * reporter executor. Idempotent.
   */
  @Override
  public void close() {
    if (!closing.compareAndSet(false, true)) {
      return;
    }
    Thread driverThread;
    lock.lock();
    try {
      driverThread = driver;
      changed.signalAll();
    } finally {
      lock.unlock();
    }
    if (driverThread != null && driverThread != Thread.currentThread()) {
      try {
        driverThread.join(DRIVER_STOP_TIMEOUT.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      if (driverThread.isAlive()) {
        log.warn("simulator driver did not stop within {}", DRIVER_STOP_TIMEOUT);
      }
    }
    if (reporters != null) {
      reporters.close();
    }
  }

  private void drive() {
    while (!closing.get()) {
      lock.lock();
      try {
        if (stalled || finished) {
          // Nothing can change any more: sleep until close() signals.
          changed.await();
          continue;
        }
        long before = stepsCompleted;
        try {
          passLocked();
        } catch (RuntimeException e) {
          // A bug in the model must not kill the thread silently or spin: report it and idle as stalled.
          log.error("simulator driver failed after {} steps; idling until closed", stepsCompleted, e);
          stalled = true;
          changed.signalAll();
        }
        if (stepsCompleted > before) {
          long remaining = stepIntervalNanos;
          while (remaining > 0 && !closing.get()) {
            remaining = changed.awaitNanos(remaining);
          }
        } else if (job.wakeAtNanos() > 0) {
          // A slow rank holds its step back: nothing moves until it issues it.
          changed.awaitNanos(Math.max(100_000, job.wakeAtNanos() - clock.getAsLong()));
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } finally {
        lock.unlock();
      }
    }
  }

  /** One pass of the job; updates the published counters and signals a stall or the end. */
  @GuardedBy("lock")
  private void passLocked() {
    boolean moved = job.pass(stepLimit);
    stepsCompleted = job.stepsCompleted();
    if (stepsCompleted >= stepLimit) {
      finished = true;
      changed.signalAll();
    } else if (!moved && job.wakeAtNanos() == 0) {
      stalled = true;
      log.info("simulated job stalled after {} completed steps ({})", stepsCompleted, describe(fault));
      changed.signalAll();
    }
  }

  /** Runs on the driving thread, inside a pass. */
  private void onDeath(int rank) {
    if (reporters != null) {
      reporters.kill(rank);
    }
  }

  /** Runs on the driving thread, inside a pass: the faulty rank's host reports its link down, without waiting. */
  private void onFabricFault(int rank) {
    if (nodes != null) {
      nodes.postLinkDown(rank);
    }
  }

  private void checkOpen() {
    if (closing.get()) {
      throw new IllegalStateException("the simulator is closed");
    }
  }

  private RankIdentity identityOf(String jobId, int rank) {
    int local = topology.localRankOf(rank);
    return RankIdentity.newBuilder()
        .setJobId(jobId)
        .setGlobalRank(rank)
        .setWorldSize(topology.worldSize())
        .setLocalRank(local)
        .setHostname(topology.hostOf(rank))
        .setPid(PID_BASE + rank)
        .setCudaDevice(local)
        .setFrdiagVersion(FrdiagVersion.current())
        .setFrameworkVersion(FRAMEWORK_VERSION)
        .setNcclVersion(NCCL_VERSION)
        .build();
  }

  private static String describe(Fault fault) {
    return switch (fault.kind()) {
      case NONE -> "no fault injected";
      case FABRIC -> "FABRIC at step " + fault.atStep();
      default -> fault.kind() + " on rank " + fault.rank() + " at step " + fault.atStep();
    };
  }

  /** Builds a {@link RankSimulator}; every setter validates, {@link #build} checks the settings together. */
  public static final class Builder {
    private Topology topology = Topology.defaults();
    private Workload workload = Workload.defaults();
    private Fault fault = Fault.none();
    private long steps = DEFAULT_STEPS;
    private int recorderCapacity = FlightRecorder.DEFAULT_CAPACITY;
    private Duration collectiveTimeout = DEFAULT_COLLECTIVE_TIMEOUT;
    private LongSupplier clock = FlightRecorder::epochNanos;
    private Channel channel;
    private IntFunction<Channel> rankChannels;
    private String jobId = DEFAULT_JOB_ID;
    private ReporterSettings reporterSettings = ReporterSettings.defaults();
    private boolean nodeAgents;
    private Duration stepInterval = DEFAULT_STEP_INTERVAL;

    private Builder() {}

    public Builder topology(Topology topology) {
      this.topology = Objects.requireNonNull(topology, "topology");
      return this;
    }

    public Builder workload(Workload workload) {
      this.workload = Objects.requireNonNull(workload, "workload");
      return this;
    }

    /** The hang to inject; {@link Fault#none()} by default. */
    public Builder fault(Fault fault) {
      this.fault = Objects.requireNonNull(fault, "fault");
      return this;
    }

    /** Total steps to run before idling; {@link #DEFAULT_STEPS} runs until closed. */
    public Builder steps(long steps) {
      if (steps < 1) {
        throw new IllegalArgumentException("steps must be at least 1, got " + steps);
      }
      this.steps = steps;
      return this;
    }

    /** Records each rank's recorder keeps; small values (256) let thousands of ranks fit in memory. */
    public Builder recorderCapacity(int capacity) {
      if (capacity < 1) {
        throw new IllegalArgumentException("recorderCapacity must be at least 1, got " + capacity);
      }
      this.recorderCapacity = capacity;
      return this;
    }

    /** The process-group timeout recorded with every op (informational; nothing times out in the simulator). */
    public Builder collectiveTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "collectiveTimeout");
      if (timeout.isNegative()) {
        throw new IllegalArgumentException("collectiveTimeout must not be negative, got " + timeout);
      }
      this.collectiveTimeout = timeout;
      return this;
    }

    /**
     * Wall clock in epoch nanoseconds for recorders and reporters; inject one for reproducible times. With a
     * channel it is also read on reporter threads, so it must be thread-safe.
     */
    public Builder clock(LongSupplier epochNanos) {
      this.clock = Objects.requireNonNull(epochNanos, "epochNanos");
      return this;
    }

    /** Streams every rank to the daemon behind {@code channel}; without one no reporters are created. */
    public Builder channel(Channel channel) {
      this.channel = Objects.requireNonNull(channel, "channel");
      return this;
    }

    /**
     * Streams each rank through the channel {@code byRank} gives it (its host's node relay, say) rather than
     * {@link #channel}'s, which the node agents still post to; needs a {@link #channel} too.
     */
    public Builder rankChannels(IntFunction<Channel> byRank) {
      this.rankChannels = Objects.requireNonNull(byRank, "byRank");
      return this;
    }

    /**
     * @throws IllegalArgumentException if empty or longer than 256 UTF-8 bytes
     */
    public Builder jobId(String jobId) {
      Objects.requireNonNull(jobId, "jobId");
      if (jobId.isEmpty()) {
        throw new IllegalArgumentException("jobId must not be empty");
      }
      int bytes = jobId.getBytes(StandardCharsets.UTF_8).length;
      if (bytes > MAX_JOB_ID_BYTES) {
        throw new IllegalArgumentException(
            "jobId must be at most " + MAX_JOB_ID_BYTES + " bytes in UTF-8, got " + bytes);
      }
      this.jobId = jobId;
      return this;
    }

    public Builder reporterSettings(ReporterSettings settings) {
      this.reporterSettings = Objects.requireNonNull(settings, "reporterSettings");
      return this;
    }

    /**
     * With a channel, also plays each host's node agent: posts which GPU and NIC port every rank uses and, under a
     * fabric fault, the InfiniBand counters of the faulty rank's port going down. Off by default, so tests that
     * post node context themselves keep theirs.
     */
    public Builder nodeAgents(boolean on) {
      this.nodeAgents = on;
      return this;
    }

    /** Pause between steps in {@link RankSimulator#start} mode; zero runs as fast as possible. */
    public Builder stepInterval(Duration interval) {
      Objects.requireNonNull(interval, "stepInterval");
      if (interval.isNegative()) {
        throw new IllegalArgumentException("stepInterval must not be negative, got " + interval);
      }
      this.stepInterval = interval;
      return this;
    }

    /**
     * Creates the recorders (and, with a channel, starts the reporters, which connect in the background).
     *
     * @throws IllegalArgumentException if the fault does not fit the topology
     */
    public RankSimulator build() {
      if (fault.kind() != FaultKind.NONE && fault.rank() >= topology.worldSize()) {
        throw new IllegalArgumentException("fault rank " + fault.rank() + " is outside the world of "
            + topology.worldSize() + " ranks");
      }
      if (fault.kind() == FaultKind.MISMATCH && topology.dataParallel() < 2) {
        throw new IllegalArgumentException("a MISMATCH fault needs data-parallel groups of at least 2 ranks, "
            + "the topology has " + topology.dataParallel());
      }
      if (rankChannels != null && channel == null) {
        throw new IllegalArgumentException("rankChannels needs a channel as well, for the node agents' posts");
      }
      return new RankSimulator(this);
    }
  }
}

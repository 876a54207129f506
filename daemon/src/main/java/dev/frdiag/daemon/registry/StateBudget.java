package dev.frdiag.daemon.registry;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The bytes of what clients made the daemon hold (process groups, node context, ranks with their record windows,
 * frames and events, their progress), estimated as they are taken in and given back as they are dropped, against a limit
 * per job and one for the daemon. A client that would pass either is refused before anything of it is kept, and
 * the refusal is counted by state and scope. Thread-safe: each job's {@link Share} has its own lock, taken while
 * the job's lock is held and never the other way round; the daemon's total is a single atomic.
 */
public final class StateBudget {
  /** What a client made the daemon hold, as refusals are counted ({@code frdiag_state_refused_total{state}}). */
  public enum State {
    GROUPS("groups", "process groups"),
    CONTEXT("context", "node context"),
    /** A rank's own state: its identity, record window, stack frames and events. */
    RANKS("ranks", "ranks"),
    PROGRESS("progress", "group progress"),
    WATCHERS("watchers", "reports queued for incident watchers");

    private final String label;
    private final String words;

    State(String label, String words) {
      this.label = label;
      this.words = words;
    }

    /** Its metric label, e.g. "groups". */
    public String label() {
      return label;
    }
  }

  /** Where a refusal's limit was: one job's, the daemon's, or one watcher's. */
  public enum Scope {
    JOB, DAEMON, WATCHER;

    /** Its metric label, e.g. "job". */
    public String label() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  private final long max;
  private final AtomicLong used = new AtomicLong();
  private final AtomicLongArray refusals = new AtomicLongArray(State.values().length * Scope.values().length);

  /** @param max the bytes all jobs together may hold */
  public StateBudget(long max) {
    if (max < 1) {
      throw new IllegalArgumentException("the daemon's state limit must be positive, got " + max);
    }
    this.max = max;
  }

  /**
   * A job's (or any other holder's) part of the budget, at most {@code max} bytes; {@code what} names it and
   * {@code option} is where its limit is set, as a refusal says them.
   */
  public Share share(String what, long max, String option) {
    return new Share(what, max, option);
  }

  /** The bytes held now, as estimated. */
  public long used() {
    return used.get();
  }

  /** The bytes all jobs together may hold. */
  public long max() {
    return max;
  }

  /** Counts a refusal of {@code state} at {@code scope} (one made elsewhere, such as a watcher cut off). */
  public void countRefusal(State state, Scope scope) {
    refusals.incrementAndGet(state.ordinal() * Scope.values().length + scope.ordinal());
  }

  /** Refusals since start, by state and scope; only those that happened. */
  public Map<State, Map<Scope, Long>> refusals() {
    Map<State, Map<Scope, Long>> out = new EnumMap<>(State.class);
    for (State s : State.values()) {
      for (Scope scope : Scope.values()) {
        long n = refusals.get(s.ordinal() * Scope.values().length + scope.ordinal());
        if (n > 0) {
          out.computeIfAbsent(s, k -> new EnumMap<>(Scope.class)).put(scope, n);
        }
      }
    }
    return out;
  }

  /** One job's part of the daemon's budget. Its lock is a leaf: nothing else is locked while it is held. */
  public final class Share {
    private final String what;
    private final long max;
    private final String option;
    @GuardedBy("this")
    private long used;
    @GuardedBy("this")
    private boolean closed;

    private Share(String what, long max, String option) {
      this.what = what;
      this.max = max;
      this.option = option;
    }

    /**
     * Takes {@code bytes} more for {@code state}, or refuses them whole.
     *
     * @throws LimitExceededException naming the state, the holder, the bytes and the limit passed
     */
    public synchronized void reserve(State state, long bytes) {
      if (bytes <= 0 || closed) {
        add(bytes);
        return;
      }
      if (used + bytes > max) {
        StateBudget.this.countRefusal(state, Scope.JOB);
        throw new LimitExceededException(what + " would hold " + (used + bytes) + " bytes with the " + state.words
            + " just sent, more than its limit of " + max + " bytes (" + option + "); refused");
      }
      long total;
      do {
        total = StateBudget.this.used.get();
        if (total + bytes > StateBudget.this.max) {
          StateBudget.this.countRefusal(state, Scope.DAEMON);
          throw new LimitExceededException("the daemon would hold " + (total + bytes) + " bytes of client state "
              + "with the " + state.words + " just sent for " + what + ", more than its limit of "
              + StateBudget.this.max + " bytes (--max-state-bytes); refused");
        }
      } while (!StateBudget.this.used.compareAndSet(total, total + bytes));
      used += bytes;
    }

    /** Adds {@code bytes} (given back when negative) without a limit: a change already made. */
    public synchronized void add(long bytes) {
      if (closed || bytes == 0) {
        return;
      }
      long delta = Math.max(bytes, -used);
      used += delta;
      StateBudget.this.used.addAndGet(delta);
    }

    /** Counts a refusal of {@code state} at this share's own limit, made by its holder. */
    public void countRefusal(State state) {
      StateBudget.this.countRefusal(state, Scope.JOB);
    }

    /** The bytes it holds now. */
    public synchronized long used() {
      return used;
    }

    /** Gives back everything it holds; what is added later is not counted. */
    public synchronized void close() {
      if (!closed) {
        StateBudget.this.used.addAndGet(-used);
        used = 0;
        closed = true;
      }
    }
  }
}

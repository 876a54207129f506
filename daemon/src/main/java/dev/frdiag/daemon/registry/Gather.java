package dev.frdiag.daemon.registry;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.DumpRequest;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;

/**
 * The snapshots gathered for one dump request of a job: which rank was asked on which stream, the replies kept so
 * far, and when the gather is done. Part of the job's {@link Incident}, which starts and ends it; the daemon's
 * investigator decides when it is done enough (a quorum, or the deadline). Thread-safe on its own monitor rather
 * than the job's lock: the replies of thousands of ranks arrive at once and must not queue behind the job's
 * heartbeats.
 */
public final class Gather {
  private final DumpRequest request;
  private final Set<Integer> standIns;
  private final boolean ofIncident;
  private final LongSupplier nanoTime;
  private final CompletableFuture<Void> done = new CompletableFuture<>();
  @GuardedBy("this")
  private final Map<Integer, DumpReply> replies = new HashMap<>();
  /** Each rank asked, with the session it was asked on: only that session may answer. */
  @GuardedBy("this")
  private final Map<Integer, String> expected = new HashMap<>();
  @GuardedBy("this")
  private boolean expectedKnown;
  /** Replies that came before {@link #expect} said whom the request went to, with the session each came on. */
  @GuardedBy("this")
  private final Map<Integer, String> early = new HashMap<>();
  @GuardedBy("this")
  private long lastReplyNanos;

  Gather(DumpRequest request, Set<Integer> standIns, boolean ofIncident, LongSupplier nanoTime) {
    this.request = request;
    this.standIns = Set.copyOf(standIns);
    this.ofIncident = ofIncident;
    this.nanoTime = nanoTime;
  }

  /** The request; ranks that open a new stream while it is out are sent it too. */
  public DumpRequest request() {
    return request;
  }

  /** Whether this gather is the open incident's own (not an on-demand diagnosis running beside it). */
  boolean ofIncident() {
    return ofIncident;
  }

  /** Completes when every rank asked has answered, or when {@link #finish} is called (quorum, deadline). */
  public CompletableFuture<Void> done() {
    return done;
  }

  /** Ends the gather with the replies it has. */
  public void finish() {
    done.complete(null);
  }

  /** The ranks the request was sent to, each with the session it was sent on. */
  public synchronized void expect(Map<Integer, String> ranks) {
    // A rank asked again on a stream it opened meanwhile keeps that stream's session.
    ranks.forEach(expected::putIfAbsent);
    expectedKnown = true;
    checkDone();
  }

  /**
   * Expects {@code rank}'s reply on {@code session} instead of any earlier one; returns the request to send it, or
   * null when the gather is over, the rank has answered, or its window stands in.
   */
  synchronized DumpRequest expectAgain(int rank, String session) {
    if (done.isDone() || replies.containsKey(rank) || standIns.contains(rank)) {
      return null;
    }
    expected.put(rank, session);
    return request;
  }

  /** How many ranks were asked, including those asked again on a new stream. */
  public synchronized int expectedCount() {
    return expected.size();
  }

  /** Takes {@code rank}'s reply on {@code session}; a reply from a stream other than the one asked is dropped. */
  synchronized void add(int rank, String session, DumpReply reply) {
    // Replies can arrive before expect() has run (the request went out first); those are checked in checkDone.
    if (expectedKnown && !session.equals(expected.get(rank))) {
      return;
    }
    if (!expectedKnown) {
      early.put(rank, session);
    }
    replies.put(rank, reply);
    lastReplyNanos = nanoTime.getAsLong();
    checkDone();
  }

  /**
   * Ends the gather when at most 1 % of the ranks asked are missing and no reply came for {@code quietNanos}. Below
   * 100 ranks that is none: a small job waits for every answer (or the deadline), since one rank is a large part of
   * its evidence.
   */
  public synchronized void finishOnQuorum(long quietNanos) {
    int missing = expected.size() - replies.size();
    int allowed = expected.size() / 100;
    if (expectedKnown && replies.size() > 0 && missing <= allowed
        && nanoTime.getAsLong() - lastReplyNanos >= quietNanos) {
      done.complete(null);
    }
  }

  @GuardedBy("this")
  private void checkDone() {
    if (!expectedKnown) {
      return;
    }
    // Replies that came before the ranks asked were known: keep only those from the session asked.
    early.forEach((rank, session) -> {
      if (!session.equals(expected.get(rank))) {
        replies.remove(rank);
      }
    });
    early.clear();
    if (replies.keySet().containsAll(expected.keySet())) {
      done.complete(null);
    }
  }

  /** The replies kept so far, by rank. */
  public synchronized Map<Integer, DumpReply> replies() {
    return Map.copyOf(replies);
  }
}

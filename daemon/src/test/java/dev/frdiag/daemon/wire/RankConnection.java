package dev.frdiag.daemon.wire;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.DaemonMessage;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.RankMessage;
import io.grpc.Channel;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** One rank's Connect stream as a test drives it: what the daemon sent, and how it ended the stream. */
final class RankConnection implements StreamObserver<DaemonMessage> {
  private final BlockingQueue<DaemonMessage> received = new LinkedBlockingQueue<>();
  private final CompletableFuture<Status> ended = new CompletableFuture<>();
  private final StreamObserver<RankMessage> out;
  private volatile DumpReply answer;

  RankConnection(Channel channel) {
    out = CollectorGrpc.newStub(channel).connect(this);
  }

  /** Opens a stream, sends {@code messages} and returns the status the daemon ends it with (OK on completion). */
  static CompletableFuture<Status> send(Channel channel, RankMessage... messages) {
    RankConnection r = new RankConnection(channel);
    for (RankMessage m : messages) {
      r.send(m);
    }
    return r.ended;
  }

  RankConnection send(RankMessage m) {
    // Answers to dump requests go out on gRPC's thread, other messages on the test's.
    synchronized (out) {
      out.onNext(m);
    }
    return this;
  }

  /** Ends the rank's side of the stream, as a process that closes its channel does. */
  void close() {
    out.onCompleted();
  }

  /** Cancels the rank's side of the stream with an error, as a process that dies mid-call does. */
  void fail(Throwable cause) {
    out.onError(cause);
  }

  /** The daemon's next message, within 5 s. */
  DaemonMessage next() throws InterruptedException {
    DaemonMessage m = received.poll(5, TimeUnit.SECONDS);
    assertThat(m).as("a message from the daemon within 5 s").isNotNull();
    return m;
  }

  /** How the daemon ended the stream, within 5 s. */
  Status end() throws Exception {
    return ended.get(5, TimeUnit.SECONDS);
  }

  /** How the daemon ends the stream, once it does. */
  CompletableFuture<Status> ended() {
    return ended;
  }

  /** From now on answers every snapshot request at once with {@code reply}, as a rank that is not busy does. */
  void answerEveryDumpRequest(DumpReply reply) {
    answer = reply;
  }

  @Override
  public void onNext(DaemonMessage value) {
    DumpReply reply = answer;
    if (reply != null && value.hasDumpRequest()) {
      send(RankMessage.newBuilder().setDumpReply(reply.toBuilder().setRequestId(value.getDumpRequest()
          .getRequestId())).build());
      return;
    }
    received.add(value);
  }

  @Override
  public void onError(Throwable t) {
    ended.complete(Status.fromThrowable(t));
  }

  @Override
  public void onCompleted() {
    ended.complete(Status.OK);
  }
}

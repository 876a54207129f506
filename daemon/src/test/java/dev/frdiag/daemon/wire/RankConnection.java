package dev.frdiag.daemon.wire;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.DaemonMessage;
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
    out.onNext(m);
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

  @Override
  public void onNext(DaemonMessage value) {
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

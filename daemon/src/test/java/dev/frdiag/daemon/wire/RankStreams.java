package dev.frdiag.daemon.wire;

import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.DaemonMessage;
import dev.frdiag.proto.v1.RankMessage;
import io.grpc.Channel;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CompletableFuture;

/** A rank's Connect stream as a test drives it: send messages, learn how the daemon ended the stream. */
final class RankStreams {
  private RankStreams() {}

  /** Opens a stream, sends {@code messages} and returns the status the daemon ends it with (OK on completion). */
  static CompletableFuture<Status> send(Channel channel, RankMessage... messages) {
    CompletableFuture<Status> ended = new CompletableFuture<>();
    StreamObserver<RankMessage> out = CollectorGrpc.newStub(channel).connect(new StreamObserver<>() {
      @Override
      public void onNext(DaemonMessage value) {
      }

      @Override
      public void onError(Throwable t) {
        ended.complete(Status.fromThrowable(t));
      }

      @Override
      public void onCompleted() {
        ended.complete(Status.OK);
      }
    });
    for (RankMessage m : messages) {
      out.onNext(m);
    }
    return ended;
  }
}

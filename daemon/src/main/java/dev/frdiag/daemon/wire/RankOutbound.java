package dev.frdiag.daemon.wire;

import dev.frdiag.proto.v1.DaemonMessage;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;

/**
 * Where a rank stream's replies go: its own gRPC call, or its frames on a node stream. Calls on one outbound are
 * made under the rank session's lock, so implementations need not order them.
 */
interface RankOutbound {
  /** Sends one message; a stream already gone is not an error. */
  void send(DaemonMessage message);

  /** Ends the rank stream with {@code status}. */
  void fail(Status status);

  /** Ends the rank stream cleanly. */
  void complete();

  /** True once the peer has gone, so nothing more can reach it. */
  boolean isCancelled();

  /** A rank's own Connect call. */
  static RankOutbound of(ServerCallStreamObserver<DaemonMessage> call) {
    return new RankOutbound() {
      @Override
      public void send(DaemonMessage message) {
        call.onNext(message);
      }

      @Override
      public void fail(Status status) {
        call.onError(status.asRuntimeException());
      }

      @Override
      public void complete() {
        call.onCompleted();
      }

      @Override
      public boolean isCancelled() {
        return call.isCancelled();
      }
    };
  }
}

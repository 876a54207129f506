package dev.frdiag.testing.incidents;

import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.ReportEnvelope;
import dev.frdiag.proto.v1.WatchIncidentsRequest;
import io.grpc.Channel;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;

/** Subscribes to a job's incidents on a daemon and queues each report as it is written. */
public final class IncidentWatch {
  /** Reports kept until taken; a watcher that falls further behind loses the newest. */
  static final int CAPACITY = 16;

  private IncidentWatch() {}

  /** Starts watching {@code job}; the stream ends when {@code channel} is shut down. */
  public static BlockingQueue<ReportEnvelope> of(Channel channel, String job) {
    BlockingQueue<ReportEnvelope> reports = new ArrayBlockingQueue<>(CAPACITY);
    DiagnosisGrpc.newStub(channel).watchIncidents(WatchIncidentsRequest.newBuilder().setJobId(job).build(),
        new StreamObserver<>() {
          @Override
          public void onNext(ReportEnvelope value) {
            reports.offer(value);
          }

          @Override
          public void onError(Throwable t) {
            // The channel was shut down or the daemon went away: no more reports will come.
          }

          @Override
          public void onCompleted() {
          }
        });
    return reports;
  }
}

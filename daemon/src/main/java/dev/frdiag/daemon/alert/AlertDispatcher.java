package dev.frdiag.daemon.alert;

import dev.frdiag.daemon.fleet.Standing;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportSink;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends every report to the targets that want its job, on a thread of its own: the analysis hands a report over
 * and goes on, whatever the targets do. A delivery that fails is retried with exponential backoff; a queue that
 * fills (targets down for long) drops its oldest report and counts it.
 */
public final class AlertDispatcher implements ReportSink, AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(AlertDispatcher.class);
  static final int QUEUE = 1000;
  static final int ATTEMPTS = 5;

  /** One body for one target; {@code what} names it in logs. */
  private record Delivery(AlertTarget target, String what, Function<AlertTarget.Kind, String> body) {}

  private final List<AlertTarget> targets;
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private final Duration firstBackoff;
  private final Consumer<String> failed;
  private final ArrayDeque<Delivery> queue = new ArrayDeque<>();
  private final AtomicLong dropped = new AtomicLong();
  private final Thread worker;
  private volatile boolean closed;

  /**
   * @param firstBackoff the wait before the first retry; it doubles with each one
   * @param failed told the target of every delivery given up (for metrics)
   */
  public AlertDispatcher(List<AlertTarget> targets, Duration firstBackoff, Consumer<String> failed) {
    this.targets = List.copyOf(targets);
    this.firstBackoff = firstBackoff;
    this.failed = failed;
    this.worker = new Thread(this::run, "frdiag-alerts");
    worker.setDaemon(true);
    worker.start();
  }

  /** Never blocks: queues the report for each target that wants its job. */
  @Override
  public void accept(Report report) {
    enqueue(t -> t.wants(report.job()), "report " + report.reportId(), k -> AlertBodies.of(k, report));
  }

  /**
   * Never blocks: queues a part that reached the fleet alert score for each target that wants one of the jobs
   * whose hangs named it.
   */
  public void acceptPart(Standing part) {
    enqueue(t -> part.recent().stream().anyMatch(i -> t.wants(i.job())), "part " + part.part().display(),
        k -> AlertBodies.of(k, part));
  }

  private void enqueue(Predicate<AlertTarget> wanted, String what, Function<AlertTarget.Kind, String> body) {
    synchronized (queue) {
      for (AlertTarget t : targets) {
        if (wanted.test(t)) {
          if (queue.size() >= QUEUE) {
            Delivery lost = queue.removeFirst();
            dropped.incrementAndGet();
            failed.accept(lost.target().kind().name().toLowerCase(java.util.Locale.ROOT));
            log.warn("alert queue full: {} not sent to {}", lost.what(), lost.target());
          }
          queue.addLast(new Delivery(t, what, body));
        }
      }
      queue.notifyAll();
    }
  }

  /** Reports dropped because the queue was full. */
  public long dropped() {
    return dropped.get();
  }

  private void run() {
    while (!closed) {
      Delivery next;
      synchronized (queue) {
        while (queue.isEmpty() && !closed) {
          try {
            queue.wait();
          } catch (InterruptedException e) {
            return;
          }
        }
        if (closed) {
          return;
        }
        next = queue.removeFirst();
      }
      deliver(next);
    }
  }

  private void deliver(Delivery d) {
    String body = d.body().apply(d.target().kind());
    Duration backoff = firstBackoff;
    String problem = "";
    for (int attempt = 1; attempt <= ATTEMPTS && !closed; attempt++) {
      try {
        HttpResponse<Void> r = http.send(HttpRequest.newBuilder(d.target().url()).timeout(Duration.ofSeconds(10))
            .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
            HttpResponse.BodyHandlers.discarding());
        if (r.statusCode() / 100 == 2) {
          log.debug("{} sent to {}", d.what(), d.target());
          return;
        }
        problem = "HTTP " + r.statusCode();
      } catch (java.io.IOException e) {
        problem = e.toString();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      if (attempt < ATTEMPTS) {
        try {
          Thread.sleep(backoff.toMillis());
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
        backoff = backoff.multipliedBy(2);
      }
    }
    failed.accept(d.target().kind().name().toLowerCase(java.util.Locale.ROOT));
    log.warn("{} could not be sent to {} after {} attempts: {}", d.what(), d.target(),
        ATTEMPTS, problem);
  }

  @Override
  public void close() {
    closed = true;
    synchronized (queue) {
      queue.notifyAll();
    }
    worker.interrupt();
  }
}

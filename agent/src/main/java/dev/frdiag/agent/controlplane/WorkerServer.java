package dev.frdiag.agent.controlplane;

import dev.frdiag.agent.controlplane.ControlPlaneException.Reason;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Asks one rank's PyTorch worker server for what it serves. PyTorch 2.4 and later start that server when the
 * training script runs under {@code torch.distributed.elastic.control_plane.worker_main()} with
 * {@code TORCH_WORKER_SERVER_SOCKET} set: HTTP/1.1 on a Unix domain socket, {@code GET /handler/} lists the
 * handlers, and each handler runs on {@code POST /handler/<name>} only (a GET on it is a bare 404). Which handlers
 * there are depends on the build: a CPU build has {@code fr_trace_json} but no NCCL handler.
 *
 * <p>Immutable and thread-safe.
 */
public final class WorkerServer {
  /** Every Python thread's stack, in faulthandler's format. */
  public static final String TRACEBACK = "dump_traceback";
  /** py-spy's dump of the rank, with thread names; answers 500 when py-spy is not on the rank's PATH. */
  public static final String PYSPY = "pyspy_dump";

  private final UnixHttpClient client;

  public WorkerServer(UnixHttpClient client) {
    this.client = Objects.requireNonNull(client, "client");
  }

  /**
   * The names of the handlers the worker server has, as it lists them.
   *
   * @throws ControlPlaneException when it did not answer with a JSON list of names
   */
  public List<String> handlers(Path socket) throws ControlPlaneException {
    HttpAnswer answer = client.get(socket, "/handler/");
    if (answer.status() != 200) {
      throw status(socket, "the list of handlers", answer);
    }
    List<String> names = names(new String(answer.body(), StandardCharsets.UTF_8));
    if (names == null) {
      throw new ControlPlaneException(socket, Reason.BAD_ANSWER, "the worker server at " + socket
          + " did not list its handlers as a JSON list of names: '" + answer.text(200) + "'");
    }
    return names;
  }

  /**
   * The rank's {@code recorder} as JSON, with its collectives and no stack traces: the cheap read.
   *
   * @param onlyActive leave out completed entries where the recorder can; pg_status still counts them
   * @throws ControlPlaneException when the rank did not answer with its dump
   */
  public byte[] dump(Path socket, Recorder recorder, boolean onlyActive) throws ControlPlaneException {
    return call(socket, recorder.handler(), recorder.target(onlyActive));
  }

  /**
   * The rank's Python stacks as text from {@code handler} ({@link #TRACEBACK} or {@link #PYSPY}).
   *
   * @throws ControlPlaneException when the handler did not answer 200
   */
  public String stacks(Path socket, String handler) throws ControlPlaneException {
    return new String(call(socket, handler, "/handler/" + handler), StandardCharsets.UTF_8);
  }

  private byte[] call(Path socket, String handler, String target) throws ControlPlaneException {
    HttpAnswer answer = client.post(socket, target);
    if (answer.status() != 200) {
      throw status(socket, handler, answer);
    }
    return answer.body();
  }

  private static ControlPlaneException status(Path socket, String what, HttpAnswer answer) {
    return new ControlPlaneException(socket, Reason.HTTP_STATUS, "the worker server at " + socket + " answered "
        + answer.status() + " to " + what + (answer.body().length == 0 ? "" : ": " + answer.text(200)));
  }

  /** The strings of a flat JSON list of strings without escapes, as PyTorch writes handler names; else null. */
  static List<String> names(String json) {
    String s = json.strip();
    if (s.length() < 2 || s.charAt(0) != '[' || s.charAt(s.length() - 1) != ']') {
      return null;
    }
    List<String> out = new ArrayList<>();
    String inner = s.substring(1, s.length() - 1).strip();
    if (inner.isEmpty()) {
      return out;
    }
    for (String item : inner.split(",", -1)) {
      String t = item.strip();
      if (t.length() < 2 || t.charAt(0) != '"' || t.charAt(t.length() - 1) != '"'
          || t.substring(1, t.length() - 1).matches(".*[\"\\\\].*")) {
        return null;
      }
      out.add(t.substring(1, t.length() - 1));
    }
    return out;
  }
}

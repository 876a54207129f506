package dev.frdiag.agent.controlplane;

import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * One HTTP answer read from a Unix domain socket.
 *
 * @param status the status code, such as 200 or 400
 * @param contentType the Content-Type header; empty when absent
 * @param body the body with any chunked framing removed
 */
public record HttpAnswer(int status, String contentType, byte[] body) {
  public HttpAnswer {
    Objects.requireNonNull(contentType, "contentType");
    Objects.requireNonNull(body, "body");
  }

  /** The body as text, cut to {@code max} characters, for error messages. */
  public String text(int max) {
    String s = new String(body, 0, Math.min(body.length, max * 4), StandardCharsets.UTF_8).strip();
    return s.length() > max ? s.substring(0, max) + "…" : s;
  }
}

package dev.frdiag.report;

/**
 * Text that came from ranks, dumps or logs (op names, group names, hosts, frames, messages), made safe to show:
 * on a terminal it can carry escape sequences that rewrite the screen, in Markdown it can forge structure, and
 * bidirectional controls can make it read as something else. Control characters are shown as escapes instead.
 */
public final class UntrustedText {
  private UntrustedText() {}

  /** One line for a terminal: C0/C1 controls, DEL and bidi controls shown as {@code \x1b} / {@code \u202e}. */
  public static String line(String s) {
    if (s == null) {
      return "";
    }
    StringBuilder out = null;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      String escape = escape(c);
      if (escape != null && out == null) {
        out = new StringBuilder(s.length() + 8).append(s, 0, i);
      }
      if (out != null) {
        out.append(escape != null ? escape : String.valueOf(c));
      }
    }
    return out == null ? s : out.toString();
  }

  /** One line of Markdown: {@link #line} plus the characters that would make it structure, escaped. */
  public static String markdown(String s) {
    String safe = line(s);
    StringBuilder out = new StringBuilder(safe.length() + 8);
    for (int i = 0; i < safe.length(); i++) {
      char c = safe.charAt(i);
      if ("\\`*_[]<>#|~".indexOf(c) >= 0) {
        out.append('\\');
      }
      out.append(c);
    }
    return out.toString();
  }

  /** Text for an HTML element or a quoted attribute: {@link #line} plus {@code & < > " '} as entities. */
  public static String html(String s) {
    String safe = line(s);
    StringBuilder out = new StringBuilder(safe.length() + 16);
    for (int i = 0; i < safe.length(); i++) {
      char c = safe.charAt(i);
      switch (c) {
        case '&' -> out.append("&amp;");
        case '<' -> out.append("&lt;");
        case '>' -> out.append("&gt;");
        case '"' -> out.append("&quot;");
        case '\'' -> out.append("&#39;");
        default -> out.append(c);
      }
    }
    return out.toString();
  }

  private static String escape(char c) {
    if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0)) {
      return String.format("\\x%02x", (int) c);
    }
    // Bidi embeddings, overrides and isolates, and the marks that steer them.
    if ((c >= '\u202a' && c <= '\u202e') || (c >= '\u2066' && c <= '\u2069') || c == '\u200e' || c == '\u200f'
        || c == '\u061c') {
      return String.format("\\u%04x", (int) c);
    }
    return null;
  }
}

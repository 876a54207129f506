package dev.frdiag.report;

import dev.frdiag.analysis.Culprit;
import java.util.ArrayList;
import java.util.List;

/**
 * How a report shows a culprit's Python stacks: where a CPU-side culprit is stuck in one line, then every thread
 * its stack dump shows. Every value is the rank's own text: callers make it safe where they write it.
 */
final class CulpritStacks {
  private CulpritStacks() {}

  /** "stuck at sleep_forever (train.py:106), Python stack from dump_traceback"; empty when not known. */
  static String stuckAt(Culprit k) {
    return k.stuckAt().isEmpty() ? "" : "stuck at " + k.stuckAt() + ", Python stack from " + k.stacksFrom();
  }

  /** "thread 0x7f27775ebb80 (main)", "thread 3995 \"fr-watcher\" (idle)": a thread as its dump names it. */
  static String title(Culprit.PythonThread t) {
    List<String> marks = new ArrayList<>();
    if (t.main()) {
      marks.add("main");
    }
    if (t.idle()) {
      marks.add("idle");
    }
    return "thread " + t.id() + (t.name().isEmpty() ? "" : " \"" + t.name() + "\"")
        + (marks.isEmpty() ? "" : " (" + String.join(", ", marks) + ")");
  }

  /** The page's part: the stuck frame, and the threads in a collapsed section (a page reads the verdict first). */
  static void html(StringBuilder b, Culprit k) {
    if (!k.stuckAt().isEmpty()) {
      b.append("<p class=\"stuck-at\">stuck at <code>").append(UntrustedText.html(k.stuckAt()))
          .append("</code>, Python stack from ").append(UntrustedText.html(k.stacksFrom())).append("</p>");
    }
    if (k.threads().isEmpty()) {
      return;
    }
    b.append("<details class=\"python-stacks\"><summary>Python stacks (").append(k.threads().size())
        .append(k.threads().size() == 1 ? " thread" : " threads").append(", from ")
        .append(UntrustedText.html(k.stacksFrom())).append(")</summary>");
    for (Culprit.PythonThread t : k.threads()) {
      b.append("<p class=\"sub\">").append(UntrustedText.html(title(t))).append("</p><pre class=\"stack\">");
      t.frames().forEach(f -> b.append("at ").append(UntrustedText.html(f)).append('\n'));
      b.append("</pre>");
    }
    b.append("</details>");
  }
}

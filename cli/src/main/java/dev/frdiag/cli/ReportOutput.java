package dev.frdiag.cli;

import dev.frdiag.report.Report;
import dev.frdiag.report.ReportHtml;
import dev.frdiag.report.ReportJson;
import dev.frdiag.report.ReportText;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * Where a command prints a report: as text, or JSON with --json, on its output, and as a page with --html. Both
 * are options of {@code fr-diagnose} that every subcommand inherits, so a subcommand's printing needs the command
 * line, not the command that declared them.
 */
final class ReportOutput {
  private final PrintWriter out;
  private final PrintWriter err;
  private final boolean json;
  /** Where the page goes; null for none. */
  private final Path html;

  ReportOutput(PrintWriter out, PrintWriter err, boolean json, Path html) {
    this.out = out;
    this.err = err;
    this.json = json;
    this.html = html;
  }

  /** As the command line of {@code spec} asks: --json and --html where {@code fr-diagnose} declares them. */
  static ReportOutput of(CommandSpec spec) {
    OptionSpec json = spec.root().findOption("--json");
    OptionSpec html = spec.root().findOption("--html");
    return new ReportOutput(spec.commandLine().getOut(), spec.commandLine().getErr(),
        json != null && Boolean.TRUE.equals(json.getValue()), html == null ? null : html.getValue());
  }

  /** Prints {@code report}, writes its page when asked; returns the exit code its verdict gives. */
  int show(Report report) {
    out.print(json ? ReportJson.write(report) + "\n" : ReportText.plain(report));
    out.flush();
    if (html != null) {
      writePage(report, html);
      err.println("fr-diagnose: report page written to " + html.toAbsolutePath());
    }
    return ExitCode.of(report.verdict());
  }

  /** Written beside the target and moved into place, so a reader never opens half a page. */
  private static void writePage(Report report, Path file) {
    Path dir = file.toAbsolutePath().getParent();
    try {
      Path tmp = Files.createTempFile(dir, ".frdiag-page", ".tmp");
      try {
        Files.writeString(tmp, ReportHtml.page(report), StandardCharsets.UTF_8);
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      } finally {
        Files.deleteIfExists(tmp);
      }
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot write the report page to " + file + ": " + e, e);
    }
  }
}

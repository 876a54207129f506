package dev.frdiag.cli.analyze;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.frdiag.cli.FrDiagnose;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportJson;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Runs {@code fr-diagnose analyze} as a user would, and reads what it printed. */
final class Analyze {
  private static final ObjectMapper JSON = new ObjectMapper();

  private Analyze() {}

  /** What one run printed and returned. */
  record Result(int code, String out, String err) {
    Report report() {
      return ReportJson.read(out);
    }

    /**
     * The report JSON without what differs between two runs over the same evidence: when it was made, and the
     * timeline line that says how long reading and analysing took.
     */
    JsonNode comparable() {
      try {
        ObjectNode tree = (ObjectNode) JSON.readTree(out);
        String createdAt = tree.remove("created_at").asText();
        ArrayNode timeline = (ArrayNode) tree.get("timeline");
        for (int i = timeline.size() - 1; i >= 0; i--) {
          if (timeline.get(i).get("at").asText().equals(createdAt)) {
            timeline.remove(i);
          }
        }
        return tree;
      } catch (java.io.IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    List<String> errLines() {
      return err.lines().toList();
    }
  }

  /** {@code fr-diagnose analyze <paths> --json}. */
  static Result json(Path... paths) {
    List<String> args = new ArrayList<>(List.of("analyze", "--json"));
    for (Path p : paths) {
      args.add(p.toString());
    }
    return run(args.toArray(String[]::new));
  }

  static Result run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = FrDiagnose.run(args, new PrintWriter(out), new PrintWriter(err));
    return new Result(code, out.toString(), err.toString());
  }

  /** A folder of the real PyTorch dumps kept with the reader's tests (see their NOTICE.md). */
  static Path sample(String folder) {
    Path p = Path.of("..", "testing", "src", "test", "resources", "fr_dumps", folder);
    if (!Files.isDirectory(p)) {
      throw new IllegalStateException("sample dumps not found at " + p.toAbsolutePath()
          + ": run the tests from the cli module's directory");
    }
    return p;
  }
}

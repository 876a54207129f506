package dev.frdiag.cli;

import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The run {@code mvn package} records the start-up archives on (the class-data archive, JDK 25's AOT cache): the
 * offline analyses users run, in one JVM, so that every path among them starts from the archive.
 *
 * <p>One {@code fr-diagnose analyze} run loads only the classes of its own output: trained on the text report alone,
 * a {@code --json} run loaded Jackson's serializers from their jars at every start (0.2 s of a 64-rank analysis).
 *
 * <p>usage: {@code StartupTraining DUMPS HTML_FILE}; prints the text report, exits with its exit code.
 */
public final class StartupTraining {
  private StartupTraining() {}

  public static void main(String[] args) {
    if (args.length != 2) {
      System.err.println("usage: StartupTraining DUMPS HTML_FILE");
      System.exit(ExitCode.USAGE);
    }
    String dumps = args[0];
    PrintWriter discard = new PrintWriter(OutputStream.nullOutputStream(), false, StandardCharsets.UTF_8);
    PrintWriter err = new PrintWriter(System.err, true);
    for (List<String> command : List.of(
        List.of("analyze", "-q", "--json", "--html", args[1], dumps),
        List.of("--version"))) {
      FrDiagnose.run(command.toArray(String[]::new), discard, err);
    }
    // Last, so that what it prints is the training report the build keeps.
    System.exit(FrDiagnose.run(new String[] {"analyze", "-q", dumps}, new PrintWriter(System.out, true), err));
  }
}

package dev.frdiag.command;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

class CommandRunnerTest {
  @TempDir
  Path dir;

  private final StringWriter out = new StringWriter();
  private final StringWriter err = new StringWriter();

  /** Fails as {@code --fail} says, else prints its interval. */
  @Command(name = "fr-test", mixinStandardHelpOptions = true)
  static final class Cmd implements Callable<Integer> {
    @Option(names = "--interval", converter = DurationConverter.class)
    Duration interval = Duration.ofSeconds(1);

    @Option(names = "--fail")
    String fail;

    @Option(names = "--config")
    Path config;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws IOException {
      switch (fail == null ? "" : fail) {
        case "usage" -> throw new IllegalArgumentException("--interval is too long");
        case "io" -> throw new IOException("disk gone");
        case "unchecked" -> throw new UncheckedIOException(new IOException("pipe closed"));
        default -> spec.commandLine().getOut().println("every " + interval);
      }
      return 0;
    }
  }

  private CommandRunner runner() {
    return CommandRunner.of(new Cmd()).output(new PrintWriter(out, true), new PrintWriter(err, true));
  }

  @Test
  void aBadOptionIsOneLineNamingTheCommandThenWhereHelpIsAndExitsTwo() {
    assertThat(runner().execute("--interval", "soon")).isEqualTo(CommandRunner.USAGE);
    assertThat(err.toString()).isEqualTo("fr-test: Invalid value for option '--interval': 'soon' is not a duration: "
        + "use e.g. 500ms, 30s, 2m, 1h, 30d\nTry 'fr-test --help'.\n".replace("\n", System.lineSeparator()));
  }

  @Test
  void theHelpHintCanStandOnTheErrorsOwnLine() {
    assertThat(runner().helpHintInline().execute("--nope")).isEqualTo(2);
    assertThat(err.toString().strip()).isEqualTo("fr-test: Unknown option: '--nope' (see fr-test --help)");
  }

  @Test
  void anIllegalArgumentFromTheCommandIsAUsageErrorSaidAsItsMessage() {
    assertThat(runner().failures(5).execute("--fail", "usage")).isEqualTo(2);
    assertThat(err.toString().strip()).isEqualTo("fr-test: --interval is too long");
  }

  @Test
  void otherFailuresAreOneLineWithTheirExitCode() {
    assertThat(runner().failures(5).execute("--fail", "io")).isEqualTo(5);
    assertThat(err.toString().strip()).isEqualTo("fr-test: IOException: disk gone");
  }

  @Test
  void aFailureCanBeDescribedOtherwise() {
    assertThat(runner().failures(1, Object::toString).execute("--fail", "io")).isEqualTo(1);
    assertThat(err.toString().strip()).isEqualTo("fr-test: java.io.IOException: disk gone");
  }

  @Test
  void withoutAFailureCodeAFailureIsLeftToPicocliWhichPrintsItsStackTraceAndExitsOne() {
    assertThat(runner().execute("--fail", "io")).isEqualTo(1);
    assertThat(err.toString()).startsWith("java.io.IOException: disk gone").contains("\tat ");
  }

  @Test
  void onlyTheGivenTypeIsAUsageError() {
    CommandRunner runner = runner().usageErrors(UncheckedIOException.class).failures(1, Object::toString);
    assertThat(runner.execute("--fail", "unchecked")).isEqualTo(2);
    assertThat(err.toString().strip()).isEqualTo("fr-test: java.io.IOException: pipe closed");
    assertThat(runner().usageErrors(UncheckedIOException.class).failures(1, Object::toString)
        .execute("--fail", "usage")).isEqualTo(1);
  }

  @Test
  void aHandlerForATypeComesFirstAndSaysItsOwnMessageAndCode() {
    CommandRunner runner = runner().failures(5).on(IOException.class,
        (e, commandLine) -> new CommandRunner.Outcome("UNAVAILABLE: " + e.getMessage() + " in "
            + commandLine.getCommandName(), 3));
    assertThat(runner.execute("--fail", "io")).isEqualTo(3);
    assertThat(err.toString().strip()).isEqualTo("fr-test: UNAVAILABLE: disk gone in fr-test");
  }

  @Test
  void versionNamesTheCommandAndTheBuild() {
    assertThat(runner().execute("--version")).isZero();
    assertThat(out.toString().strip()).matches("fr-test \\d+\\.\\d+\\.\\d+(-SNAPSHOT)?");
    assertThat(err.toString()).isEmpty();
  }

  @Test
  void aConfigFileSetsDefaultsAndIsNamedWhenItsValueIsBad() throws IOException {
    Path conf = dir.resolve("test.conf");
    Files.writeString(conf, "interval=2m\n");
    ConfigFile[] read = new ConfigFile[1];
    assertThat(runner().readConfigFile(f -> read[0] = f).execute("--config", conf.toString())).isZero();
    assertThat(out.toString().strip()).isEqualTo("every PT2M");
    assertThat(read[0].file()).isEqualTo(conf);

    Files.writeString(conf, "interval=soon\n");
    assertThat(runner().readConfigFile(f -> {}).execute("--config", conf.toString())).isEqualTo(2);
    assertThat(err.toString()).contains("fr-test: Invalid value for option '--interval': 'soon' is not a duration",
        "(interval= in " + conf + ")", "Try 'fr-test --help'.");
  }

  @Test
  void anUnreadableConfigFileIsAUsageErrorBeforeAnythingRuns() throws IOException {
    Path conf = dir.resolve("test.conf");
    Files.writeString(conf, "intervall=2m\n");
    ConfigFile[] read = {null};
    assertThat(runner().readConfigFile(f -> read[0] = f).execute("--config", conf.toString())).isEqualTo(2);
    assertThat(err.toString().strip()).isEqualTo("fr-test: config file " + conf + ": unknown key 'intervall'; known "
        + "keys: fail, interval");
    assertThat(read[0]).isNull();
    assertThat(out.toString()).isEmpty();
  }

  @Test
  void parsingAloneSaysAUsageErrorAsTheMessageItWouldPrint() throws IOException {
    Path conf = dir.resolve("test.conf");
    Files.writeString(conf, "interval=soon\n");
    Cmd cmd = new Cmd();
    assertThatThrownBy(() -> CommandRunner.of(cmd).readConfigFile().parse("--config", conf.toString()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("Invalid value for option '--interval': 'soon' is not a duration: use e.g. 500ms, 30s, 2m, 1h, "
            + "30d (interval= in " + conf + ")");
    CommandRunner.of(cmd).parse("--interval", "3s");
    assertThat(cmd.interval).hasSeconds(3);
  }

  @Test
  void withoutAConfigFileTheConsumerHearsNull() {
    boolean[] heard = {false};
    assertThat(runner().readConfigFile(f -> heard[0] = f == null).execute()).isZero();
    assertThat(heard[0]).isTrue();
  }
}

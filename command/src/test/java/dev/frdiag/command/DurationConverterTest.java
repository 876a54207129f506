package dev.frdiag.command;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class DurationConverterTest {

  @Test
  void readsTheUnitsPeopleType() {
    assertThat(DurationConverter.parse("500ms")).isEqualTo(Duration.ofMillis(500));
    assertThat(DurationConverter.parse("30s")).isEqualTo(Duration.ofSeconds(30));
    assertThat(DurationConverter.parse(" 2M ")).isEqualTo(Duration.ofMinutes(2));
    assertThat(DurationConverter.parse("1h")).isEqualTo(Duration.ofHours(1));
    assertThat(DurationConverter.parse("30d")).isEqualTo(Duration.ofDays(30));
    assertThat(DurationConverter.parse("PT1.5S")).isEqualTo(Duration.ofMillis(1500));
  }

  @Test
  void refusesWhatIsNoDurationNamingIt() {
    for (String bad : new String[] {"soon", "10", "s", "10x", "ms", "PTxS", ""}) {
      assertThatThrownBy(() -> DurationConverter.parse(bad)).as(bad)
          .isInstanceOf(CommandLine.TypeConversionException.class)
          .hasMessage("'" + bad + "' is not a duration: use e.g. 500ms, 30s, 2m, 1h, 30d");
    }
  }

  @Test
  void refusesZeroAndNegativeBecauseEveryDurationIsATimeoutOrAnInterval() {
    assertThatThrownBy(() -> DurationConverter.parse("0s")).hasMessage("'0s' is not above zero");
    assertThatThrownBy(() -> DurationConverter.parse("-5ms")).hasMessage("'-5ms' is not above zero");
  }

  @Test
  void versionNamesTheCommandAndTheBuild() {
    @CommandLine.Command(name = "fr-test", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class)
    class Cmd implements Runnable {
      @Override
      public void run() {}
    }
    java.io.StringWriter out = new java.io.StringWriter();
    CommandLine cmd = new CommandLine(new Cmd()).setOut(new java.io.PrintWriter(out));
    assertThat(cmd.execute("--version")).isZero();
    assertThat(out.toString().strip()).matches("fr-test \\d+\\.\\d+\\.\\d+(-SNAPSHOT)?");
  }
}

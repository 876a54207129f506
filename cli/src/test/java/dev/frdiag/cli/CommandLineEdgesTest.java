package dev.frdiag.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import java.io.File;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What an unlucky user gives fr-diagnose, and the one clear line it answers with. */
class CommandLineEdgesTest {
  @TempDir
  Path dir;

  private record Result(int code, String out, String err) {}

  private static Result run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = FrDiagnose.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
    return new Result(code, out.toString(), err.toString());
  }

  @Test
  void aPipeAmongTheInputsIsSkippedByNameInsteadOfWaitedOnForever() throws Exception {
    dev.frdiag.cli.analyze.HangsAccess.write(dir);
    Path pipe = dir.resolve("pipe_3.pipe");
    assertThat(new ProcessBuilder("mkfifo", pipe.toString()).start().waitFor()).isZero();

    Result r = run("analyze", "-q", "--json", dir.toString(), pipe.toString());
    assertThat(r.err()).contains("fr-diagnose: skipping " + pipe + ": not a regular file (a pipe, socket or device)");
    assertThat(r.code()).isEqualTo(ExitCode.HANG);
  }

  @Test
  void aTimeoutOfZeroIsAUsageError() {
    Result r = run("--timeout", "0", "jobs");
    assertThat(r.code()).isEqualTo(ExitCode.USAGE);
    assertThat(r.err()).isEqualTo("fr-diagnose: --timeout must be at least 1 second, got 0\n");
  }

  @Test
  void aHostThatDoesNotResolveIsOneLine() {
    Result r = run("--daemon", "no-such-host.invalid:50551", "--timeout", "5", "jobs");
    assertThat(r.code()).isEqualTo(ExitCode.UNREACHABLE_OR_UNKNOWN);
    assertThat(r.err()).startsWith("fr-diagnose: UNAVAILABLE: cannot reach the daemon at no-such-host.invalid:50551 "
        + "(cannot resolve host 'no-such-host.invalid')").hasLineCount(1);
  }

  @Test
  void aServerThatIsNotFrdiagIsNamedAsSuch() throws Exception {
    HttpServer web = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    web.createContext("/", e -> {
      e.sendResponseHeaders(200, -1);
      e.close();
    });
    web.start();
    try {
      Result r = run("--daemon", "127.0.0.1:" + web.getAddress().getPort(), "--timeout", "5", "jobs");
      assertThat(r.code()).isNotZero();
      assertThat(r.err()).contains("it does not speak gRPC: is it an frdiag daemon?").hasLineCount(1);
    } finally {
      web.stop(0);
    }
  }

  @Test
  void runningOutOfMemoryHasItsOwnExitCodeAndSaysHowToGiveMore() throws Exception {
    dev.frdiag.cli.analyze.HangsAccess.write(dir);
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
        .toString(), "-Xmx6m", "-cp", System.getProperty("java.class.path"), FrDiagnose.class.getName(),
        "analyze", "-q", dir.toString()));
    Process p = new ProcessBuilder(command).redirectOutput(new File("/dev/null")).start();
    String err = new String(p.getErrorStream().readAllBytes());
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(err).isEqualTo(ExitCode.OUT_OF_MEMORY);
    assertThat(err).contains("fr-diagnose: out of memory").contains("FRDIAG_JAVA_OPTS=-Xmx8g");
  }
}

package dev.frdiag.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AgentMainTest {
  private static final String HOME = System.getProperty("user.home");

  @TempDir
  Path dir;

  @Test
  void readsRangesListsAndDefaults() {
    AgentSettings s = AgentMain.parse("--job", "run7", "--world-size", "16", "--local-ranks", "8-11,14, 15");

    assertThat(s.jobId()).isEqualTo("run7");
    assertThat(s.worldSize()).isEqualTo(16);
    assertThat(s.localRanks()).containsExactly(8, 9, 10, 11, 14, 15);
    assertThat(s.dumpPrefix()).isEqualTo(HOME + "/.cache/torch/comm_lib_trace_rank_");
    assertThat(s.pipePrefix()).isNull();
    assertThat(s.logFiles()).isEmpty();
    assertThat(s.pollInterval()).isEqualTo(Duration.ofSeconds(1));
    assertThat(s.dumpWait()).isEqualTo(Duration.ofSeconds(15));
    assertThat(s.hostname()).isNotEmpty().doesNotContain(".");
    assertThat(s.workerSocket()).isNull();
    assertThat(s.progressInterval()).isEqualTo(Duration.ofSeconds(5));
    assertThat(s.pipeDumpInterval()).as("periodic pipe dumps are off unless asked for").isNull();
  }

  @Test
  void readsTheWorkerSocketAndProgressOptions() {
    AgentSettings s = AgentMain.parse("--job", "run7", "--world-size", "8", "--local-ranks", "0-7",
        "--worker-socket", "~/run/torch_worker_{rank}.sock", "--progress-interval", "2s",
        "--pipe-dump-interval", "5m");

    assertThat(s.workerSocket(6)).isEqualTo(Path.of(HOME, "run", "torch_worker_6.sock"));
    assertThat(s.progressInterval()).isEqualTo(Duration.ofSeconds(2));
    assertThat(s.pipeDumpInterval()).isEqualTo(Duration.ofMinutes(5));
  }

  @Test
  void discoversRanksWithAutoAndTakesTheirWorldSize() {
    AgentSettings s = AgentMain.parse("--job", "run7", "--local-ranks", "auto", "--run-id", "llama-42");

    assertThat(s.discoverRanks()).isTrue();
    assertThat(s.localRanks()).isEmpty();
    assertThat(s.worldSize()).isZero();
    assertThat(s.runId()).isEqualTo("llama-42");
    assertThat(error("--job", "j", "--world-size", "8", "--local-ranks", "0-3", "--run-id", "x"))
        .isEqualTo("--run-id needs --local-ranks auto");
  }

  @Test
  void readsEveryOption() {
    AgentSettings s = AgentMain.parse("--job=run7", "--daemon", "10.0.0.5:6000", "--world-size", "8",
        "--local-ranks", "0-7", "--hostname", "gpu-node-3", "--dump-prefix", "/tmp/nccl_trace_rank_",
        "--pipe-prefix", "~/fr/pipe_", "--log", "/logs/a.log", "--log", "/logs/b.log,~/c.log",
        "--poll-interval", "250ms", "--dump-wait", "PT20S");

    assertThat(s.hostname()).isEqualTo("gpu-node-3");
    assertThat(s.dumpFile(3)).isEqualTo(Path.of("/tmp/nccl_trace_rank_3"));
    assertThat(s.pipe(3)).isEqualTo(Path.of(HOME, "fr", "pipe_3.pipe"));
    assertThat(s.logFiles()).containsExactly(Path.of("/logs/a.log"), Path.of("/logs/b.log"),
        Path.of(HOME, "c.log"));
    assertThat(s.pollInterval()).isEqualTo(Duration.ofMillis(250));
    assertThat(s.dumpWait()).isEqualTo(Duration.ofSeconds(20));
  }

  @Test
  void takesValuesFromTheConfigFileAndFlagsOverrideThem() throws IOException {
    Path config = dir.resolve("agent.properties");
    Files.writeString(config, """
        # fr-agent for node 2
        job = run7
        world-size=32
        local-ranks=16-23
        daemon=daemon.cluster:50551
        pipe-prefix=/tmp/fr_pipe_
        log=/logs/rank16.log,/logs/rank17.log
        poll-interval=2s
        """);

    AgentSettings s = AgentMain.parse("--config", config.toString(), "--local-ranks", "16-19",
        "--poll-interval", "500ms");

    assertThat(s.jobId()).isEqualTo("run7");
    assertThat(s.worldSize()).isEqualTo(32);
    assertThat(s.localRanks()).containsExactly(16, 17, 18, 19);
    assertThat(s.pipe(16)).isEqualTo(Path.of("/tmp/fr_pipe_16.pipe"));
    assertThat(s.logFiles()).containsExactly(Path.of("/logs/rank16.log"), Path.of("/logs/rank17.log"));
    assertThat(s.pollInterval()).isEqualTo(Duration.ofMillis(500));
    assertThat(s.dumpWait()).isEqualTo(Duration.ofSeconds(15));
  }

  @Test
  void refusesBadValuesWithOneLine() throws IOException {
    assertThat(error("--world-size", "8", "--local-ranks", "0-7"))
        .isEqualTo("missing --job");
    assertThat(error("--job", "j", "--world-size", "8", "--local-ranks", "7-0"))
        .isEqualTo("Invalid value for option '--local-ranks': '7-0' is not a rank list: range 7-0 goes down"
            + " (use e.g. 0-7, 0,2,4-6 or auto)");
    assertThat(error("--job", "j", "--world-size", "8", "--local-ranks", "0-3,x"))
        .isEqualTo("Invalid value for option '--local-ranks': '0-3,x' is not a rank list: 'x' is neither a rank"
            + " nor a range (use e.g. 0-7, 0,2,4-6 or auto)");
    assertThat(error("--job", "j", "--world-size", "8", "--local-ranks", "4-11"))
        .isEqualTo("local rank 8 is outside world size 8 (ranks 0-7)");
    assertThat(error("--job", "j", "--world-size", "eight", "--local-ranks", "0"))
        .isEqualTo("Invalid value for option '--world-size': 'eight' is not an int");
    assertThat(error("--job", "j", "--world-size", "8", "--local-ranks", "0", "--poll-interval", "soon"))
        .isEqualTo("Invalid value for option '--poll-interval': 'soon' is not a duration: use e.g. 500ms, 30s,"
            + " 2m, 1h, 30d");
    assertThat(error("--job", "j", "--world-size", "8", "--local-ranks", "0", "--dump-wait", "0s"))
        .isEqualTo("Invalid value for option '--dump-wait': '0s' is not above zero");
    assertThat(error("--job", "j", "--world-size", "8", "--local-ranks", "0", "--daemon", "host:99999"))
        .isEqualTo("--daemon 'host:99999' is not host:port (e.g. 127.0.0.1:50551)");
    assertThat(error("--job", "bad job", "--world-size", "8", "--local-ranks", "0"))
        .startsWith("invalid job id 'bad job'");

    Path config = dir.resolve("agent.properties");
    Files.writeString(config, "job=run7\nworld-size=sixteen\nlocal-ranks=0-7\n");
    assertThat(error("--config", config.toString()))
        .isEqualTo("Invalid value for option '--world-size': 'sixteen' is not an int (world-size= in " + config
            + ")");
    Files.writeString(config, "job=run7\nwrld-size=16\n");
    assertThat(error("--config", config.toString())).startsWith("config file " + config
        + ": unknown key 'wrld-size'; known keys: daemon, dump-prefix, dump-wait, fan-in, hostname, ib-root, job, local-ranks, log, log-format, nccl-log");
    Files.writeString(config, "job=run7\n");
    assertThat(error("--config", config.toString()))
        .isEqualTo("missing --world-size (not on the command line nor in " + config + ")");
    assertThat(error("--config", dir.resolve("nope.properties").toString()))
        .startsWith("cannot read config file " + dir.resolve("nope.properties") + ": ");
  }

  @Test
  void printsErrorsAsOneLineAndExitsWithTwo() {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();

    int code = AgentMain.run(new String[] {"--job", "j", "--world-size", "x"}, new PrintWriter(out, true),
        new PrintWriter(err, true));

    assertThat(code).isEqualTo(2);
    assertThat(err.toString()).isEqualTo("fr-agent: Invalid value for option '--world-size': 'x' is not an int"
        + " (see fr-agent --help)" + System.lineSeparator());
    assertThat(out.toString()).isEmpty();

    err.getBuffer().setLength(0);
    assertThat(AgentMain.run(new String[] {"--world-size", "2", "--local-ranks", "0"}, new PrintWriter(out, true),
        new PrintWriter(err, true))).isEqualTo(2);
    assertThat(err.toString()).isEqualTo("fr-agent: missing --job" + System.lineSeparator());
  }

  @Test
  void helpDocumentsDefaultsAndExitCodes() {
    StringWriter out = new StringWriter();

    int code = AgentMain.run(new String[] {"--help"}, new PrintWriter(out, true), new PrintWriter(new StringWriter()));

    assertThat(code).isZero();
    assertThat(out.toString()).contains("--daemon=HOST:PORT", "default 127.0.0.1:50551",
        "Default: ~/.cache/torch/comm_lib_trace_rank_", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "default 1s",
        "default 15s", "--config=FILE", "Exit codes:", "usage error", "SIGTERM");
  }

  private static String error(String... args) {
    try {
      AgentMain.parse(args);
    } catch (IllegalArgumentException e) {
      return e.getMessage();
    }
    throw new AssertionError("no error for " + List.of(args));
  }
}

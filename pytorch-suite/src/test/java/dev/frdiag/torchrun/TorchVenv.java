package dev.frdiag.torchrun;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Python venv with torch the suite runs its jobs in: {@code target/torch-venv}, made once by {@code python3 -m
 * venv} and {@code pip install}, reused while it still imports torch and was made with the same pip arguments.
 *
 * <p>pip finds the wheel through its own configuration (pip.conf, {@code PIP_*} variables: on a machine without
 * network, {@code find-links} to a folder of wheels). {@code FRDIAG_TORCH_PIP_ARGS} replaces the default arguments
 * {@value #DEFAULT_PIP_ARGS}; {@code FRDIAG_PYTHON} names the interpreter that makes the venv (default {@code
 * python3}). Without torch the suite fails, saying why; {@code -Dfrdiag.pytorch.skip=true} skips it instead, except
 * when {@code CI=true}.
 */
final class TorchVenv {
  /**
   * pip's own configuration decides where torch comes from; {@code --retries 0} because an index that cannot be
   * reached (no network) would otherwise cost five retries per package: 161 s instead of 29-53 s here.
   * numpy keeps torch from warning at import; tabulate is what torchfrtrace prints its tables with.
   */
  static final String DEFAULT_PIP_ARGS = "--retries 0 torch numpy tabulate";
  static final String SKIP_PROPERTY = "frdiag.pytorch.skip";
  static final Duration INSTALL_DEADLINE = Duration.ofMinutes(20);

  private static final Logger log = LoggerFactory.getLogger(TorchVenv.class);
  private static final Path DIR = Path.of("target", "torch-venv").toAbsolutePath();
  private static final String ARGS_FILE = "frdiag-pip-args";

  private static TorchVenv instance;
  private static RuntimeException failure;

  private final Path dir;
  private final String torchVersion;

  private TorchVenv(Path dir, String torchVersion) {
    this.dir = dir;
    this.torchVersion = torchVersion;
  }

  /**
   * The venv, made on the first call.
   *
   * @throws IllegalStateException when torch cannot be had (every later call throws the same)
   */
  static synchronized TorchVenv get() {
    if (Boolean.getBoolean(SKIP_PROPERTY)) {
      if ("true".equals(System.getenv("CI"))) {
        throw new IllegalStateException("-D" + SKIP_PROPERTY + " is for local builds; CI=true runs the "
            + "real-PyTorch suite");
      }
      Assumptions.abort("real-PyTorch suite skipped: -D" + SKIP_PROPERTY + "=true");
    }
    if (failure != null) {
      throw failure;
    }
    if (instance == null) {
      try {
        instance = make();
      } catch (IOException | RuntimeException e) {
        failure = new IllegalStateException("real-PyTorch suite: no venv with torch: " + e.getMessage()
            + ". Set FRDIAG_TORCH_PIP_ARGS to what `pip install` needs to find torch here (now: "
            + pipArgs() + "), or skip locally with -D" + SKIP_PROPERTY + "=true", e);
        throw failure;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while making the venv", e);
      }
    }
    return instance;
  }

  /** The venv's directory. */
  Path dir() {
    return dir;
  }

  /** A program of the venv's {@code bin/}: python, torchrun, torchfrtrace. */
  Path bin(String name) {
    return dir.resolve("bin").resolve(name);
  }

  /** {@code torch.__version__}, e.g. "2.13.0+cpu". */
  String torchVersion() {
    return torchVersion;
  }

  private static String pipArgs() {
    String args = System.getenv("FRDIAG_TORCH_PIP_ARGS");
    return args == null || args.isBlank() ? DEFAULT_PIP_ARGS : args.strip();
  }

  private static TorchVenv make() throws IOException, InterruptedException {
    String args = pipArgs();
    Path argsFile = DIR.resolve(ARGS_FILE);
    if (Files.isRegularFile(argsFile) && Files.readString(argsFile).equals(args)) {
      String version = torchVersionIn(DIR);
      if (version != null) {
        log.info("real-PyTorch suite: torch {} from {} (reused)", version, DIR);
        return new TorchVenv(DIR, version);
      }
    }
    long start = System.nanoTime();
    Path target = DIR.getParent();
    Dirs.deleteRecursively(DIR);
    String python = System.getenv().getOrDefault("FRDIAG_PYTHON", "python3");
    Commands.Result venv = Commands.run(List.of(python, "-m", "venv", DIR.toString()), target, Map.of(),
        target.resolve("torch-venv-create.log"), Duration.ofMinutes(2));
    if (venv.exitCode() != 0) {
      throw new IOException(python + " -m venv exited with " + venv.exitCode() + ": " + tail(venv.output()));
    }
    List<String> install = new ArrayList<>(List.of(DIR.resolve("bin/pip").toString(), "install"));
    install.addAll(Arrays.asList(args.split("\\s+")));
    Path pipLog = target.resolve("torch-venv-pip.log");
    Commands.Result pip = Commands.run(install, target, Map.of(), pipLog, INSTALL_DEADLINE);
    if (pip.exitCode() != 0) {
      throw new IOException("pip install " + args + " exited with " + pip.exitCode() + " (log: " + pipLog + "): "
          + tail(pip.output()));
    }
    String version = torchVersionIn(DIR);
    if (version == null) {
      throw new IOException("pip install " + args + " gave a venv where `import torch` fails (log: " + pipLog + ")");
    }
    Files.writeString(argsFile, args);
    log.info("real-PyTorch suite: torch {} from {} (made in {} s)", version, DIR,
        Duration.ofNanos(System.nanoTime() - start).toSeconds());
    return new TorchVenv(DIR, version);
  }

  private static String torchVersionIn(Path venv) throws IOException, InterruptedException {
    Path python = venv.resolve("bin/python");
    if (!Files.isExecutable(python)) {
      return null;
    }
    Path out = venv.getParent().resolve("torch-version.txt");
    Commands.Result r = Commands.run(List.of(python.toString(), "-c",
            "import sys, torch, torch.distributed as d; sys.stdout.write('torch=' + torch.__version__ + "
                + "(' gloo' if d.is_gloo_available() else ' no-gloo'))"),
        venv.getParent(), Map.of(), out, Duration.ofMinutes(2));
    String line = r.output().lines().filter(l -> l.startsWith("torch=")).findFirst().orElse("");
    if (r.exitCode() != 0 || !line.endsWith(" gloo")) {
      return null;
    }
    return line.substring("torch=".length(), line.length() - " gloo".length());
  }

  private static String tail(String output) {
    List<String> lines = output.lines().filter(l -> !l.isBlank()).toList();
    return String.join(" | ", lines.subList(Math.max(0, lines.size() - 3), lines.size()));
  }
}

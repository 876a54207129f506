package dev.frdiag.command;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Function;
import picocli.CommandLine;

/**
 * Runs a picocli command as every frdiag command line does: a usage error is one line naming the command (and the
 * config file a bad value came from) and exits {@link #USAGE}; a failure is one line and the command's exit code;
 * {@code --version} names the command and the build. Not thread-safe: one runner runs one command line once.
 */
public final class CommandRunner {
  /** The exit code of a usage error, the same for every frdiag command: a missing or bad option or value. */
  public static final int USAGE = 2;

  /** What a handled failure says after "NAME: ", and the exit code it ends with. */
  public record Outcome(String message, int exitCode) {
    public Outcome {
      Objects.requireNonNull(message, "message");
    }
  }

  private record Handler<E extends Exception>(Class<E> type, BiFunction<E, CommandLine, Outcome> handler) {
    Outcome handle(Exception e, CommandLine commandLine) {
      return handler.apply(type.cast(e), commandLine);
    }
  }

  private final CommandLine cmd;
  private final String name;
  private boolean readConfig;
  private Consumer<ConfigFile> configRead = file -> {};
  private Class<? extends Exception> usageErrors = IllegalArgumentException.class;
  private boolean hintInline;
  private final List<Handler<?>> handlers = new ArrayList<>();
  private int failureCode;
  private Function<Exception, String> failure;

  private CommandRunner(CommandLine cmd) {
    this.cmd = cmd;
    this.name = cmd.getCommandName();
  }

  /** A runner for {@code command}, an object annotated with picocli's {@code @Command}. */
  public static CommandRunner of(Object command) {
    return new CommandRunner(new CommandLine(command));
  }

  /** A runner for a command line already set up (converters, case-insensitive enums). */
  public static CommandRunner of(CommandLine cmd) {
    return new CommandRunner(cmd);
  }

  /** Where the command's output and the one-line errors go (default: picocli's, stdout and stderr). */
  public CommandRunner output(PrintWriter out, PrintWriter err) {
    cmd.setOut(Objects.requireNonNull(out, "out")).setErr(Objects.requireNonNull(err, "err"));
    return this;
  }

  /**
   * Reads the {@code --config} file the arguments name before parsing them (see {@link ConfigFile}); a bad file is a
   * usage error, and a bad value from it is reported as the file's.
   */
  public CommandRunner readConfigFile() {
    return readConfigFile(file -> {});
  }

  /**
   * As {@link #readConfigFile()}, telling the command which file was read.
   *
   * @param read given the file read, or null when the arguments name none, before the command runs
   */
  public CommandRunner readConfigFile(Consumer<ConfigFile> read) {
    this.readConfig = true;
    this.configRead = Objects.requireNonNull(read, "read");
    return this;
  }

  /** Which exceptions out of the command are usage errors, said as their message (IllegalArgumentException). */
  public CommandRunner usageErrors(Class<? extends Exception> type) {
    this.usageErrors = Objects.requireNonNull(type, "type");
    return this;
  }

  /** Points to --help on the error's own line, "(see NAME --help)", rather than on a line after it. */
  public CommandRunner helpHintInline() {
    this.hintInline = true;
    return this;
  }

  /** Handles {@code type} out of the command itself, before usage errors and other failures. */
  public <E extends Exception> CommandRunner on(Class<E> type, BiFunction<E, CommandLine, Outcome> handler) {
    handlers.add(new Handler<>(type, handler));
    return this;
  }

  /** Any other failure out of the command exits {@code exitCode}, said as "NAME: SimpleClassName: message". */
  public CommandRunner failures(int exitCode) {
    return failures(exitCode, e -> e.getClass().getSimpleName() + ": " + e.getMessage());
  }

  /**
   * Any other failure out of the command exits {@code exitCode}, said as "NAME: " and {@code describe}'s text.
   * Without this it is left to picocli, which prints its stack trace and exits 1.
   */
  public CommandRunner failures(int exitCode, Function<Exception, String> describe) {
    this.failureCode = exitCode;
    this.failure = Objects.requireNonNull(describe, "describe");
    return this;
  }

  /**
   * Parses {@code args} (and the config file they name) into the command's fields without running it.
   *
   * @throws IllegalArgumentException with the message a usage error says after "NAME: "
   */
  public void parse(String... args) {
    ConfigFile config = readConfig(args);
    try {
      cmd.parseArgs(args);
    } catch (CommandLine.ParameterException e) {
      throw new IllegalArgumentException(describe(config, e), e);
    }
  }

  /** Parses {@code args}, runs the command and returns its exit code; errors are one line on the error writer. */
  public int execute(String... args) {
    PrintWriter err = cmd.getErr();
    if (cmd.getCommandSpec().versionProvider() == null) {
      cmd.getCommandSpec().versionProvider(new VersionProvider(cmd.getCommandSpec()));
    }
    ConfigFile config;
    try {
      config = readConfig(args);
    } catch (IllegalArgumentException e) {
      say(err, e.getMessage());
      return USAGE;
    }
    cmd.setParameterExceptionHandler((e, a) -> {
      String message = describe(config, e);
      if (hintInline) {
        say(err, message + " (see " + name + " --help)");
      } else {
        say(err, message);
        err.println("Try '" + name + " --help'.");
      }
      return USAGE;
    });
    cmd.setExecutionExceptionHandler((e, commandLine, parseResult) -> {
      for (Handler<?> h : handlers) {
        if (h.type().isInstance(e)) {
          Outcome outcome = h.handle(e, commandLine);
          say(err, outcome.message());
          return outcome.exitCode();
        }
      }
      if (usageErrors.isInstance(e)) {
        say(err, e.getMessage());
        return USAGE;
      }
      if (failure == null) {
        throw e;
      }
      say(err, failure.apply(e));
      return failureCode;
    });
    return cmd.execute(args);
  }

  /** The config file {@code args} name, read, or null; throws IllegalArgumentException naming a bad one. */
  private ConfigFile readConfig(String[] args) {
    if (!readConfig) {
      return null;
    }
    ConfigFile file = ConfigFile.apply(cmd, args);
    configRead.accept(file);
    return file;
  }

  private static String describe(ConfigFile config, CommandLine.ParameterException e) {
    return config == null ? e.getMessage() : config.describe(e);
  }

  private void say(PrintWriter err, String message) {
    err.println(name + ": " + message);
  }
}

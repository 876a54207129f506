package dev.frdiag.command;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/**
 * A {@code --config FILE} of {@code key=value} lines whose keys are a command's long option names without the
 * dashes; its values become the options' defaults, so the command line wins. Unknown keys are an error naming
 * the key and the file.
 */
public final class ConfigFile {
  /** The option that names the file. */
  public static final String OPTION = "--config";

  private final Path file;
  private final Properties values = new Properties();
  private final List<String> given;

  private ConfigFile(Path file, List<String> given) {
    this.file = file;
    this.given = given;
  }

  /**
   * Reads the file {@code args} name with {@code --config}, if any, and makes its values {@code cmd}'s defaults.
   *
   * @return the file read, or null when {@code args} name none
   * @throws IllegalArgumentException naming the file when it cannot be read or holds an unknown key
   */
  public static ConfigFile apply(CommandLine cmd, String[] args) {
    String name = argument(args);
    if (name == null) {
      return null;
    }
    ConfigFile config = new ConfigFile(Path.of(home(name)), List.of(args));
    try (Reader in = Files.newBufferedReader(config.file, StandardCharsets.UTF_8)) {
      config.values.load(in);
    } catch (IOException | IllegalArgumentException e) {
      throw new IllegalArgumentException("cannot read config file " + config.file + ": " + e);
    }
    Set<String> known = new TreeSet<>();
    for (OptionSpec o : cmd.getCommandSpec().options()) {
      if (!o.usageHelp() && !o.versionHelp() && !o.longestName().equals(OPTION)) {
        known.add(key(o));
      }
    }
    for (String key : config.values.stringPropertyNames()) {
      if (!known.contains(key)) {
        throw new IllegalArgumentException("config file " + config.file + ": unknown key '" + key
            + "'; known keys: " + String.join(", ", known));
      }
    }
    cmd.setDefaultValueProvider(arg -> arg instanceof OptionSpec o && known.contains(key(o))
        ? trimmed(config.values.getProperty(key(o))) : null);
    return config;
  }

  public Path file() {
    return file;
  }

  /** True when {@code option}'s value came from the file rather than the command line. */
  public boolean supplied(OptionSpec option) {
    return values.containsKey(key(option)) && given.stream().noneMatch(a -> a.equals(option.longestName())
        || a.startsWith(option.longestName() + "="));
  }

  /** picocli's message, saying so when the bad value came from this file. */
  public String describe(CommandLine.ParameterException e) {
    return e.getArgSpec() instanceof OptionSpec o && supplied(o)
        ? e.getMessage() + " (" + key(o) + "= in " + file + ")" : e.getMessage();
  }

  private static String trimmed(String value) {
    return value == null ? null : value.trim();
  }

  /** The value of {@code --config FILE} or {@code --config=FILE}, or null. */
  private static String argument(String[] args) {
    String found = null;
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--")) {
        break;
      }
      if (args[i].equals(OPTION) && i + 1 < args.length) {
        found = args[++i];
      } else if (args[i].startsWith(OPTION + "=")) {
        found = args[i].substring(OPTION.length() + 1);
      }
    }
    return found;
  }

  /** The config file key of an option: its name without the dashes. */
  public static String key(OptionSpec o) {
    return o.longestName().replaceFirst("^--", "");
  }

  /** Expands a leading {@code ~/}, which shells do not do inside --opt=~/x or config files. */
  public static String home(String path) {
    return path.equals("~") || path.startsWith("~/") ? System.getProperty("user.home") + path.substring(1) : path;
  }
}

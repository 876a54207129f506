package dev.frdiag.command;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Picks a command's logback configuration before its first logger exists: {@code NAME.xml} (key=value text) or,
 * with {@code --log-format json}, {@code NAME-json.xml} (one JSON object per line). A configuration given with
 * {@code -Dlogback.configurationFile} is kept, or swapped for its JSON sibling beside it.
 */
public final class LogFormat {
  /** The option, on every long-running command. */
  public static final String OPTION = "--log-format";

  private LogFormat() {}

  /** Sets {@code logback.configurationFile} for {@code name} ("logback-daemon") and the format {@code args} ask. */
  public static void configure(String name, String[] args) {
    boolean json = "json".equalsIgnoreCase(argument(args));
    String current = System.getProperty("logback.configurationFile");
    if (current == null) {
      System.setProperty("logback.configurationFile", name + (json ? "-json" : "") + ".xml");
    } else if (json && current.endsWith(name + ".xml")) {
      String sibling = current.substring(0, current.length() - ".xml".length()) + "-json.xml";
      System.setProperty("logback.configurationFile", Files.exists(Path.of(sibling)) ? sibling : name + "-json.xml");
    }
  }

  private static String argument(String[] args) {
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals(OPTION) && i + 1 < args.length) {
        return args[i + 1];
      }
      if (args[i].startsWith(OPTION + "=")) {
        return args[i].substring(OPTION.length() + 1);
      }
    }
    return null;
  }
}

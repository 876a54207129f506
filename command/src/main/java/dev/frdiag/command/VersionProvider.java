package dev.frdiag.command;

import dev.frdiag.proto.FrdiagVersion;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/**
 * Answers {@code --version} with the command's name and the version the build stamped, e.g. "fr-daemon 0.1.0".
 * {@link CommandRunner} gives it to every command it runs.
 */
public final class VersionProvider implements CommandLine.IVersionProvider {
  @CommandLine.Spec
  CommandSpec spec;

  /** For picocli, which injects the command's spec. */
  public VersionProvider() {}

  VersionProvider(CommandSpec spec) {
    this.spec = spec;
  }

  @Override
  public String[] getVersion() {
    return new String[] {spec.qualifiedName() + " " + FrdiagVersion.current()};
  }
}

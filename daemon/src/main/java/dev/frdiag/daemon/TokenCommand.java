package dev.frdiag.daemon;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.frdiag.daemon.access.AccessRules;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code fr-daemon token}: a new random token, and the access-file entry that grants it its roles. */
@Command(name = "token", mixinStandardHelpOptions = true,
    description = {"Makes a random token and prints it (first line: give it to the client, e.g. in a file for "
        + "--token-file) and the entry to add to the access file's \"principals\" (the file keeps only its SHA-256).",
        "Jobs are job ids, or * for every job."})
final class TokenCommand implements Callable<Integer> {
  @Option(names = "--name", required = true, description = "How logs name this caller, e.g. agents-job42.")
  String name;

  @Option(names = "--writer", split = ",", paramLabel = "JOB", description = "Jobs it may stream for (agents, ranks).")
  List<String> writer = List.of();

  @Option(names = "--reader", split = ",", paramLabel = "JOB", description = "Jobs whose status and reports it may read.")
  List<String> reader = List.of();

  @Option(names = "--operator", split = ",", paramLabel = "JOB", description = "Jobs it may diagnose on demand.")
  List<String> operator = List.of();

  @Spec
  picocli.CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    if (writer.isEmpty() && reader.isEmpty() && operator.isEmpty()) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(),
          "give at least one of --writer, --reader, --operator");
    }
    byte[] random = new byte[32];
    new SecureRandom().nextBytes(random);
    String token = HexFormat.of().formatHex(random);
    ObjectMapper json = new ObjectMapper();
    ObjectNode entry = json.createObjectNode().put("name", name).put("token_sha256", AccessRules.sha256(token));
    entry.set("writer", json.valueToTree(writer));
    entry.set("reader", json.valueToTree(reader));
    entry.set("operator", json.valueToTree(operator));
    spec.commandLine().getOut().println(token);
    spec.commandLine().getOut().println(json.writeValueAsString(entry));
    spec.commandLine().getOut().flush();
    return 0;
  }
}

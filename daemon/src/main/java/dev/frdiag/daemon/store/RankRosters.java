package dev.frdiag.daemon.store;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.frdiag.proto.Contract;
import dev.frdiag.proto.v1.RankIdentity;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which ranks of each job were connected, kept on disk ({@code <dataDir>/ranks/<job>.json}) so that a restarted
 * daemon knows whom to expect back before it judges a job (DIAGNOSIS.md §3, "After a restart"). Written as reports
 * are (temporary file, flushed, renamed), only when a job's connected ranks changed; a job with none connected has
 * no file. Not thread-safe: one thread keeps it.
 */
public final class RankRosters {
  private static final Logger log = LoggerFactory.getLogger(RankRosters.class);
  static final String SCHEMA = "frdiag.ranks/v1";
  /** A roster larger than this is not one this daemon wrote (a 1,048,576-rank job's is some 40 MB). */
  static final long MAX_ROSTER_BYTES = 64L * 1024 * 1024;
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * One job's ranks connected when its roster was written, and the writers it was bound to (as the access layer
   * names them: a principal, or a host address without an access file).
   */
  public record Roster(String job, int worldSize, List<RankIdentity> ranks, List<String> writers) {
    public Roster {
      ranks = List.copyOf(ranks);
      writers = List.copyOf(writers);
    }
  }

  private final Path dir;
  private final ReportStore.FileWriter writer;
  /** What each job's file says, as a digest of its ranks; a job absent has no file. */
  private final Map<String, Long> written = new HashMap<>();

  /**
   * Opens (creating if needed) the rosters under {@code dataDir}.
   *
   * @throws UncheckedIOException when the directory cannot be created
   */
  public RankRosters(Path dataDir, ReportStore.FileWriter writer) {
    this.dir = dataDir.resolve("ranks");
    this.writer = writer;
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open the rank rosters at " + dir + ": " + e.getMessage(), e);
    }
  }

  /**
   * The rosters on disk. A file that is not a whole roster is removed with a warning naming it: it only says whom
   * to wait for, and waiting for nobody is what the daemon did before it kept rosters.
   */
  public List<Roster> load() {
    List<Roster> rosters = new ArrayList<>();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
      for (Path file : files) {
        if (file.getFileName().toString().endsWith(".tmp")) {
          log.warn("removing {}: a roster write that never finished (the daemon stopped while writing it)", file);
          delete(file);
          continue;
        }
        try {
          Roster r = read(file);
          rosters.add(r);
          written.put(r.job(), null);
        } catch (IOException | RuntimeException e) {
          log.warn("removing {}: not a rank roster this daemon can read ({})", file,
              e.getMessage() == null ? e.toString() : e.getMessage());
          delete(file);
        }
      }
    } catch (IOException e) {
      log.warn("cannot list the rank rosters in {}: {}; no job waits for ranks from before the restart", dir,
          e.getMessage());
    }
    return rosters;
  }

  private Roster read(Path file) throws IOException {
    String name = file.getFileName().toString();
    if (!name.endsWith(".json") || !Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
      throw new IllegalArgumentException("not a job's .json file");
    }
    if (Files.size(file) > MAX_ROSTER_BYTES) {
      throw new IllegalArgumentException("larger than " + MAX_ROSTER_BYTES + " bytes");
    }
    JsonNode root = JSON.readTree(Files.readString(file, StandardCharsets.UTF_8));
    if (root == null || !SCHEMA.equals(root.path("schema").asText())) {
      throw new IllegalArgumentException("no schema " + SCHEMA);
    }
    String job = root.path("job").asText();
    if (!Contract.JOB_ID.matcher(job).matches() || !name.equals(job + ".json")) {
      throw new IllegalArgumentException("job '" + job + "' is not the file's name");
    }
    int worldSize = root.path("world_size").asInt(-1);
    if (worldSize < 1) {
      throw new IllegalArgumentException("world_size " + root.path("world_size") + " is not a positive number");
    }
    List<RankIdentity> ranks = new ArrayList<>();
    for (JsonNode r : root.path("ranks")) {
      int rank = r.path(0).asInt(-1);
      String host = r.path(1).asText("");
      long pid = r.path(2).asLong(-1);
      if (rank < 0 || rank >= worldSize || pid < 0 || host.length() > 255) {
        throw new IllegalArgumentException("rank entry " + r + " is not [rank < world_size, host, pid]");
      }
      ranks.add(RankIdentity.newBuilder().setJobId(job).setGlobalRank(rank).setWorldSize(worldSize)
          .setHostname(host).setPid(pid).build());
    }
    List<String> writers = new ArrayList<>();
    for (JsonNode w : root.path("writers")) {
      if (!w.isTextual() || w.asText().isEmpty() || w.asText().length() > 1024) {
        throw new IllegalArgumentException("writer " + w + " is not a name of 1-1024 characters");
      }
      writers.add(w.asText());
    }
    return new Roster(job, worldSize, ranks, writers);
  }

  /**
   * Writes the roster of each job in {@code rosters} whose connected ranks changed since it was last written
   * ({@code digest}), and removes the files of jobs no longer in it or with no rank connected. A write the disk
   * refuses is tried again next time.
   */
  public void keep(Map<String, Long> digests, java.util.function.Function<String, Roster> roster) {
    for (String job : Set.copyOf(written.keySet())) {
      if (!digests.containsKey(job)) {
        forget(job);
      }
    }
    digests.forEach((job, digest) -> {
      if (digest.equals(written.get(job))) {
        return;
      }
      Roster r = roster.apply(job);
      if (r == null || r.ranks().isEmpty()) {
        forget(job);
        return;
      }
      try {
        writer.write(dir.resolve(job + ".json"), write(r));
        written.put(job, digest);
      } catch (IOException | UncheckedIOException e) {
        log.warn("cannot write the rank roster of job {}: {}; a restart would not wait for its ranks", job,
            e.getMessage());
      }
    });
  }

  private void forget(String job) {
    if (written.containsKey(job)) {
      written.remove(job);
      delete(dir.resolve(job + ".json"));
    }
  }

  private static String write(Roster r) {
    ObjectNode root = JSON.createObjectNode().put("schema", SCHEMA).put("job", r.job())
        .put("world_size", r.worldSize());
    ArrayNode writers = root.putArray("writers");
    r.writers().forEach(writers::add);
    ArrayNode ranks = root.putArray("ranks");
    for (RankIdentity id : r.ranks()) {
      ranks.addArray().add(id.getGlobalRank()).add(id.getHostname()).add(id.getPid());
    }
    return root.toString();
  }

  private static void delete(Path file) {
    try {
      Files.deleteIfExists(file);
    } catch (IOException e) {
      log.warn("cannot remove {}: {}", file, e.getMessage());
    }
  }
}

package dev.frdiag.daemon.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.v1.RankIdentity;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The ranks each job had connected, kept on disk for a restarted daemon to wait for. */
class RankRostersTest {
  @TempDir
  Path dataDir;

  private static RankIdentity rank(String job, int rank, int worldSize) {
    return RankIdentity.newBuilder().setJobId(job).setGlobalRank(rank).setWorldSize(worldSize)
        .setHostname("node" + rank / 8).setPid(100 + rank).build();
  }

  private static RankRosters.Roster roster(String job, int worldSize, int... ranks) {
    return new RankRosters.Roster(job, worldSize,
        java.util.Arrays.stream(ranks).mapToObj(r -> rank(job, r, worldSize)).toList(),
        List.of("127.0.0.1", "agents-" + job));
  }

  @Test
  void whatWasConnectedIsReadBackByTheNextStartAndWrittenOnlyWhenItChanges() throws IOException {
    RankRosters first = new RankRosters(dataDir, ReportStore::writeDurably);
    Map<String, RankRosters.Roster> now = new java.util.HashMap<>(Map.of("a", roster("a", 16, 0, 1, 9),
        "b", roster("b", 2)));
    first.keep(Map.of("a", 1L, "b", 2L), now::get);
    Path a = dataDir.resolve("ranks").resolve("a.json");
    assertThat(a).exists();
    assertThat(dataDir.resolve("ranks").resolve("b.json")).as("no rank connected: no file").doesNotExist();

    Files.writeString(a, "changed behind its back");
    first.keep(Map.of("a", 1L, "b", 2L), now::get);
    assertThat(Files.readString(a)).as("same digest: not written again").isEqualTo("changed behind its back");
    first.keep(Map.of("a", 3L, "b", 2L), now::get);

    assertThat(new RankRosters(dataDir, ReportStore::writeDurably).load()).containsExactly(roster("a", 16, 0, 1, 9));

    first.keep(Map.of("b", 2L), now::get);
    assertThat(a).as("a job no longer tracked has no roster").doesNotExist();
  }

  @Test
  void aRosterThatCannotBeReadIsRemovedAndTheOthersLoad() throws IOException {
    RankRosters first = new RankRosters(dataDir, ReportStore::writeDurably);
    first.keep(Map.of("good", 1L), job -> roster("good", 4, 0, 3));
    Path dir = dataDir.resolve("ranks");
    Path half = Files.writeString(dir.resolve("bad.json.tmp"), "{\"schema\": \"frdiag.ranks/v1\", \"job\"");
    Path garbage = Files.writeString(dir.resolve("garbage.json"), "{not json");
    Path misnamed = Files.writeString(dir.resolve("other.json"), Files.readString(dir.resolve("good.json")));
    Path outOfRange = Files.writeString(dir.resolve("range.json"),
        "{\"schema\":\"frdiag.ranks/v1\",\"job\":\"range\",\"world_size\":4,\"ranks\":[[4,\"node0\",1]]}");

    List<RankRosters.Roster> loaded = new RankRosters(dataDir, ReportStore::writeDurably).load();

    assertThat(loaded).containsExactly(roster("good", 4, 0, 3));
    assertThat(List.of(half, garbage, misnamed, outOfRange)).noneMatch(Files::exists);
  }
}

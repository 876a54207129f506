package dev.frdiag.agent.discovery;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Finding a rank's process by its socket or pipe, over a procfs laid out by the test. */
class ProcessFinderTest {
  @TempDir
  Path proc;

  @Test
  void findsTheProcessListeningOnASocketNotThoseConnectedToIt() throws IOException {
    Files.createDirectories(proc.resolve("net"));
    Files.writeString(proc.resolve("net/unix"), """
        Num       RefCount Protocol Flags    Type St Inode Path
        0000000000000000: 00000002 00000000 00010000 0001 01 41001 /run/fr/worker_3.sock
        0000000000000000: 00000003 00000000 00000000 0001 03 41002 /run/fr/worker_3.sock
        0000000000000000: 00000002 00000000 00010000 0001 01 41003 /run/fr/worker 4.sock
        0000000000000000: 00000003 00000000 00000000 0001 03 41004
        """);
    fd(2001, 7, "socket:[41002]");
    fd(3003, 5, "socket:[41001]");
    fd(4004, 9, "socket:[41003]");

    ProcessFinder finder = new ProcessFinder(proc);

    assertThat(finder.listenerOf(Path.of("/run/fr/worker_3.sock"))).isEqualTo(3003);
    assertThat(finder.listenerOf(Path.of("/run/fr/worker 4.sock"))).as("a path with a space").isEqualTo(4004);
    assertThat(finder.listenerOf(Path.of("/run/fr/worker_5.sock"))).isZero();
    assertThat(finder.isAlive(3003)).isTrue();
    assertThat(finder.isAlive(5005)).isFalse();
  }

  @Test
  void findsTheLowestPidHoldingAPipeButNeverItself() throws IOException {
    Path pipe = Files.createFile(proc.resolve("pipe_2.pipe")).toRealPath();
    fd(ProcessHandle.current().pid(), 3, pipe.toString());
    fd(7007, 4, pipe.toString());
    fd(6006, 8, pipe.toString());
    fd(5005, 8, "/dev/null");

    assertThat(new ProcessFinder(proc).holderOf(pipe)).isEqualTo(6006);
  }

  @Test
  void findsNothingWithoutProcfs() {
    ProcessFinder finder = new ProcessFinder(proc.resolve("missing"));

    assertThat(finder.listenerOf(Path.of("/run/fr/worker_3.sock"))).isZero();
    assertThat(finder.holderOf(proc)).isZero();
  }

  private void fd(long pid, int fd, String target) throws IOException {
    Path dir = Files.createDirectories(proc.resolve(pid + "/fd"));
    Files.createSymbolicLink(dir.resolve(Integer.toString(fd)), Path.of(target));
  }
}

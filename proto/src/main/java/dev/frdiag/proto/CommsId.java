package dev.frdiag.proto;

import java.nio.charset.StandardCharsets;
import dev.frdiag.proto.v1.ProcessGroup;
import java.util.Arrays;
import java.util.Objects;

/**
 * The comms_id of an operation: a 64-bit value identical on every member rank for the same collective or
 * P2P op, in every run and every language.
 *
 * <p>{@code comms_id = fnv1a64(encode(pg_name, seq, is_p2p, global_rank_start, global_rank_stride, world_size))}
 * where {@code encode} concatenates, in this order:
 *
 * <ol>
 *   <li>the byte length of the UTF-8 process-group name as 4 bytes little-endian, then those bytes;
 *   <li>{@code seq} (collective_seq for collectives, p2p_seq for P2P) as 8 bytes little-endian;
 *   <li>one byte, 1 for P2P and 0 otherwise;
 *   <li>{@code global_rank_start}, {@code global_rank_stride} and {@code world_size} (the number of members
 *       of the process group) as 8 bytes little-endian each.
 * </ol>
 *
 * <p>fnv1a64 is FNV-1a with offset basis {@code 0xcbf29ce484222325} and prime {@code 0x100000001b3}: for each
 * byte, {@code h ^= b; h *= prime} modulo 2^64. Start and stride come from {@link #layoutOf(int[])}: a group
 * whose sorted members are an arithmetic progression uses its first member and step; any other group uses
 * stride 0 and, as start, the fnv1a64 digest of its sorted members (8 bytes little-endian each) so that two
 * groups with the same name and size but different members never share ids.
 */
public final class CommsId {
  static final long FNV_OFFSET_BASIS = 0xcbf29ce484222325L;
  static final long FNV_PRIME = 0x100000001b3L;

  private CommsId() {}

  /** How a process group's members are summarised in its comms_ids. */
  public record GroupLayout(long start, long stride, long size) {
    public GroupLayout {
      if (size < 1) {
        throw new IllegalArgumentException("a process group has at least one member, got size " + size);
      }
    }
  }

  /**
   * {@code group} with the comms_id layout its members give it (global_rank_start and global_rank_stride), as
   * senders must fill them.
   *
   * @throws IllegalArgumentException if it has no member, a negative rank or a duplicate
   */
  public static ProcessGroup withLayout(ProcessGroup group) {
    GroupLayout layout = layoutOf(group.getRanksList().stream().mapToInt(Integer::intValue).toArray());
    return group.toBuilder().setGlobalRankStart(layout.start()).setGlobalRankStride(layout.stride()).build();
  }

  /**
   * The layout of a process group with these global member ranks (any order).
   *
   * @throws IllegalArgumentException if {@code ranks} is empty, has a negative rank or a duplicate
   */
  public static GroupLayout layoutOf(int[] ranks) {
    Objects.requireNonNull(ranks, "ranks");
    if (ranks.length == 0) {
      throw new IllegalArgumentException("a process group has at least one member");
    }
    int[] sorted = ranks.clone();
    Arrays.sort(sorted);
    if (sorted[0] < 0) {
      throw new IllegalArgumentException("negative global rank " + sorted[0]);
    }
    for (int i = 1; i < sorted.length; i++) {
      if (sorted[i] == sorted[i - 1]) {
        throw new IllegalArgumentException("global rank " + sorted[i] + " appears twice in the group");
      }
    }
    if (sorted.length == 1) {
      return new GroupLayout(sorted[0], 1, 1);
    }
    long stride = (long) sorted[1] - sorted[0];
    for (int i = 2; i < sorted.length; i++) {
      if ((long) sorted[i] - sorted[i - 1] != stride) {
        return new GroupLayout(memberDigest(sorted), 0, sorted.length);
      }
    }
    return new GroupLayout(sorted[0], stride, sorted.length);
  }

  /** The comms_id of operation {@code seq} on a group with this name and layout. */
  public static long of(String processGroupName, long seq, boolean isP2p, GroupLayout layout) {
    return of(processGroupName, seq, isP2p, layout.start(), layout.stride(), layout.size());
  }

  /** The comms_id from its six defining values; see the class comment for the encoding. */
  public static long of(String processGroupName, long seq, boolean isP2p, long start, long stride, long size) {
    return of(namePrefix(processGroupName), seq, isP2p, start, stride, size);
  }

  /**
   * The hash of a group's name alone, where every comms_id of the group starts: a reader of many records of one
   * group hashes the name once and passes this to {@link #of(long, long, boolean, GroupLayout)}.
   */
  public static long namePrefix(String processGroupName) {
    byte[] name = processGroupName.getBytes(StandardCharsets.UTF_8);
    long h = FNV_OFFSET_BASIS;
    h = mixLittleEndian(h, name.length, 4);
    for (byte b : name) {
      h = mix(h, b);
    }
    return h;
  }

  /** The comms_id of operation {@code seq} on a group whose {@link #namePrefix} is {@code namePrefix}. */
  public static long of(long namePrefix, long seq, boolean isP2p, GroupLayout layout) {
    return of(namePrefix, seq, isP2p, layout.start(), layout.stride(), layout.size());
  }

  private static long of(long namePrefix, long seq, boolean isP2p, long start, long stride, long size) {
    long h = namePrefix;
    h = mixLittleEndian(h, seq, 8);
    h = mix(h, (byte) (isP2p ? 1 : 0));
    h = mixLittleEndian(h, start, 8);
    h = mixLittleEndian(h, stride, 8);
    return mixLittleEndian(h, size, 8);
  }

  /** Formats a comms_id the way reports and logs print it: 16 lowercase hex digits. */
  public static String format(long commsId) {
    return String.format("%016x", commsId);
  }

  private static long memberDigest(int[] sorted) {
    long h = FNV_OFFSET_BASIS;
    for (int rank : sorted) {
      h = mixLittleEndian(h, rank, 8);
    }
    return h;
  }

  private static long mixLittleEndian(long h, long value, int bytes) {
    for (int i = 0; i < bytes; i++) {
      h = mix(h, (byte) (value >>> (8 * i)));
    }
    return h;
  }

  private static long mix(long h, byte b) {
    return (h ^ (b & 0xff)) * FNV_PRIME;
  }
}

package dev.frdiag.readers.pytorch;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Reads PyTorch Flight Recorder dumps: the pickle that {@code _dump_nccl_trace} and the watchdog write, and
 * the JSON of {@code _dump_nccl_trace_json}. Format versions 2.2 to 2.10 are read fully; a newer 2.x is read
 * as far as its fields are known, with a warning.
 *
 * <p>Nothing in a dump is ever instantiated: each pickle opcode is checked before it acts, and a pickle
 * that imports or calls anything is refused. Every problem is a {@link DumpFormatException} with one message
 * naming the file; a truncated or corrupted file never makes the reader hang or run out of memory.
 *
 * <p>Instances are thread-safe. A reader shares the values its dumps repeat (names, shapes, dtypes) across every dump
 * it reads, up to a bound: read one job's dumps with one reader.
 */
public final class DumpReader {
  /** Files larger than this are refused unless configured otherwise: real dumps are kilobytes to megabytes. */
  static final long DEFAULT_MAX_FILE_BYTES = 1L << 30;
  /** How much of a file is checked before the rest is read: enough to hold a dump's header and first entries. */
  static final int PREFIX_BYTES = 8 * 1024;
  /** Files of up to this size are read whole before they are checked; see {@link #load}. */
  static final long PREFIX_CHECKED_ABOVE = 16L << 20;
  /** The largest limit that can be configured: a dump is read into one array. */
  public static final long MAX_FILE_BYTES_LIMIT = Integer.MAX_VALUE - 8;
  /** PyTorch's default dump file prefix ({@code TORCH_FR_DUMP_TEMP_FILE}, without its directory). */
  public static final String DEFAULT_PREFIX = "comm_lib_trace_rank_";
  /**
   * How many values a dump may decode to per byte of file. PyTorch's pickles reuse strings and stack frames
   * through the memo, each reference costing two bytes; a file that expands further is an attack or garbage.
   */
  static final int VALUES_PER_BYTE = 16;

  /** {@code <prefix><rank>} with optional {@code .json}: the rank is the digits at the end. */
  private static final Pattern RANKED = Pattern.compile("(.*\\D)?(\\d{1,9})(\\.json)?", Pattern.DOTALL);
  private static final int SNIFF_BYTES = 64;

  private final long maxFileBytes;
  /** What the dumps this reader reads repeat, one instance each; see {@link Interner}. */
  private final Interner interner = new Interner();

  private DumpReader(Builder builder) {
    this.maxFileBytes = builder.maxFileBytes;
  }

  /** A reader with the default limits. */
  public static DumpReader create() {
    return builder().build();
  }

  /** A builder for a reader with other limits. */
  public static Builder builder() {
    return new Builder();
  }

  /** Files larger than this many bytes are refused. */
  long maxFileBytes() {
    return maxFileBytes;
  }

  /**
   * Reads one dump; the rank comes from the file name ({@code <prefix><rank>}, optionally {@code .json}).
   *
   * @throws DumpFormatException if the name has no rank or the file is not a readable dump
   */
  public FlightRecorderDump read(Path file) throws DumpFormatException {
    Objects.requireNonNull(file, "file");
    OptionalInt rank = rankFromFileName(String.valueOf(file.getFileName()));
    if (rank.isEmpty()) {
      throw new DumpFormatException(file, "cannot tell the rank from the file name: expected <prefix><rank>,"
          + " such as " + DEFAULT_PREFIX + "3 or _dump_3");
    }
    return read(file, rank.getAsInt());
  }

  /**
   * Reads one dump of the given rank, whatever the file is called.
   *
   * @throws DumpFormatException if the file is not a readable dump
   */
  public FlightRecorderDump read(Path file, int rank) throws DumpFormatException {
    Objects.requireNonNull(file, "file");
    return parse(load(file), file, rank);
  }

  /**
   * Reads a dump held in memory, such as the bytes {@code _dump_nccl_trace()} or a rank's worker server returned.
   *
   * @param file the name to report it under (need not exist)
   * @throws DumpFormatException if the bytes are not a readable dump
   */
  public FlightRecorderDump parse(byte[] content, Path file, int rank) throws DumpFormatException {
    Objects.requireNonNull(content, "content");
    Objects.requireNonNull(file, "file");
    if (rank < 0) {
      throw new IllegalArgumentException("rank must not be negative, got " + rank);
    }
    if (content.length > maxFileBytes) {
      throw new DumpFormatException(file, tooLarge(content.length));
    }
    if (content.length == 0) {
      throw new DumpFormatException(file, "not a Flight Recorder dump: the file is empty");
    }
    try {
      Object root;
      boolean json;
      List<String> warnings = new ArrayList<>();
      if ((content[0] & 0xff) == PickleOpcodes.PROTO) {
        PickleDecoder.Decoded pickle = PickleDecoder.decode(content, content.length);
        if (pickle.end() < content.length) {
          warnings.add((content.length - pickle.end()) + " bytes after the pickle's STOP opcode ignored");
        }
        root = pickle.value();
        json = false;
      } else if (JsonDumps.looksLikeJson(content, content.length)) {
        root = JsonDumps.decode(content, content.length);
        json = true;
      } else {
        throw new DumpProblem(String.format("not a Flight Recorder dump: it starts with byte 0x%02x, neither a"
            + " pickle (0x80) nor a JSON object ('{')", firstNonSpace(content)));
      }
      FlightRecorderDump dump = DumpDecoder.decode(root, file, rank, json,
          (long) content.length * VALUES_PER_BYTE + 1024, interner);
      if (warnings.isEmpty()) {
        return dump;
      }
      warnings.addAll(dump.warnings());
      return new FlightRecorderDump(dump.file(), dump.rank(), dump.version(), dump.commLibVersion(),
          dump.processGroups(), dump.records(), dump.progress(), dump.frames(), warnings);
    } catch (DumpProblem p) {
      throw new DumpFormatException(file, p.getMessage());
    } catch (RuntimeException e) {
      // The pickle decoder admits only what the dump decoder handles: reaching this is a bug, named with the file.
      throw new DumpFormatException(file, "internal error while reading the dump: " + e, e);
    }
  }

  /**
   * Reads every dump in a folder: its files that start like a dump (a pickle or a JSON object), as {@link #listDumps}
   * chooses among them.
   *
   * @return one result per dump file, by rank; a corrupt file is a failed result, not an exception
   * @throws DumpFormatException if the folder cannot be listed, holds no dumps named after their rank, or holds
   *     dumps with different prefixes and none was given
   */
  DumpFolder readFolder(Path dir, Optional<String> prefix) throws DumpFormatException {
    Objects.requireNonNull(dir, "dir");
    if (!Files.isDirectory(dir)) {
      throw new DumpFormatException(dir, Files.exists(dir) ? "not a directory" : "no such directory");
    }
    List<Path> dumps = new ArrayList<>();
    List<Path> others = new ArrayList<>();
    try (Stream<Path> s = Files.list(dir)) {
      for (Path f : s.sorted().toList()) {
        (Files.isRegularFile(f) && looksLikeDump(f) ? dumps : others).add(f);
      }
    } catch (IOException e) {
      throw new DumpFormatException(dir, "cannot list the directory: " + e.getMessage(), e);
    }
    DumpFolder.Listing listing = listDumps(dir, dumps, others, prefix);
    if (listing.files().isEmpty()) {
      throw new DumpFormatException(dir, "no Flight Recorder dumps: no file is named <prefix><rank>"
          + (prefix.isPresent() ? " with prefix '" + listing.prefix() + "'" : ""));
    }
    List<DumpFileResult> results = new ArrayList<>(listing.files().size());
    for (DumpFolder.DumpFile f : listing.files()) {
      try {
        results.add(DumpFileResult.parsed(read(f.path(), f.rank())));
      } catch (DumpFormatException e) {
        results.add(DumpFileResult.failed(f.path(), f.rank(), e));
      }
    }
    return new DumpFolder(dir, listing.prefix(), results, listing.notes());
  }

  /**
   * The dumps among the files of folder {@code dir}, each with the rank its name gives ({@code <prefix><rank>}), for
   * callers that told the files apart by their content and read the dumps themselves (several at a time, handing each
   * on as soon as it is read). Which files are dumps is the caller's to say, whatever they are called; only the ranks
   * and the prefix come from the names. A dump whose name ends in no rank is left out with a note, as is one with
   * another prefix when {@code prefix} is given.
   *
   * @param dumps the folder's files that hold a dump
   * @param unknown the folder's other entries that hold nothing known: a file named as the dumps are (their prefix
   *     and a rank) is a damaged dump of that rank, listed to be read and reported as one; the others, and entries
   *     that are no regular file, are left out with a note
   * @param prefix the file name prefix of the dumps (a path prefix such as {@code /tmp/nccl_trace_rank_} works too);
   *     when empty it is inferred from the dumps' names, which works when they share one prefix
   * @return the dumps by rank (then by name when two files claim one rank); none when {@code dumps} holds none named
   *     after its rank and no damaged one has the given prefix
   * @throws DumpFormatException if the dumps' names have different prefixes and none was given
   */
  public DumpFolder.Listing listDumps(Path dir, List<Path> dumps, List<Path> unknown, Optional<String> prefix)
      throws DumpFormatException {
    Objects.requireNonNull(dir, "dir");
    Objects.requireNonNull(prefix, "prefix");
    Set<Path> isDump = new HashSet<>(dumps);
    List<Path> entries = new ArrayList<>(dumps.size() + unknown.size());
    entries.addAll(dumps);
    entries.addAll(unknown);
    entries.sort(null);
    String wanted = prefix.map(p -> p.substring(p.lastIndexOf('/') + 1)).orElse(null);
    List<String> notes = new ArrayList<>();
    List<Candidate> candidates = new ArrayList<>();
    List<Candidate> damaged = new ArrayList<>();
    for (Path f : entries) {
      String name = String.valueOf(f.getFileName());
      boolean dump = isDump.contains(f);
      if (!dump && !Files.isRegularFile(f)) {
        // Directories, and the <prefix><rank>.pipe FIFOs PyTorch may create: opening one would block.
        notes.add("ignored " + name + ": not a regular file");
        continue;
      }
      if (wanted != null) {
        if (!name.startsWith(wanted)) {
          notes.add("ignored " + name + ": its name does not start with '" + wanted + "'");
          continue;
        }
        OptionalInt rank = rankFromFileName(name, wanted);
        if (rank.isEmpty()) {
          notes.add("ignored " + name + ": no rank after the prefix");
        } else {
          (dump ? candidates : damaged).add(new Candidate(f, wanted, rank.getAsInt()));
        }
        continue;
      }
      Matcher m = RANKED.matcher(name);
      if (!m.matches()) {
        notes.add("ignored " + name + ": not named <prefix><rank>");
        continue;
      }
      (dump ? candidates : damaged).add(new Candidate(f, m.group(1) == null ? "" : m.group(1),
          Integer.parseInt(m.group(2))));
    }
    String chosen = wanted != null ? wanted : choosePrefix(dir, candidates);
    // Files that hold nothing known but are named as the dumps are: dumps cut short, emptied or overwritten.
    Map<String, List<Candidate>> others = new TreeMap<>();
    for (Candidate c : damaged) {
      if (c.prefix().equals(chosen)) {
        candidates.add(c);
      } else {
        others.computeIfAbsent(c.prefix(), p -> new ArrayList<>()).add(c);
      }
    }
    // Logs or core files that happen to end in digits are not a second family of dumps.
    others.forEach((p, files) -> notes.add("ignored " + files.size() + " file(s) named '" + p
        + "<n>': they do not start like a pickle or a JSON object"));
    candidates.sort(Comparator.comparingInt(Candidate::rank).thenComparing(c -> c.file().getFileName()));
    for (int i = 1; i < candidates.size(); i++) {
      Candidate a = candidates.get(i - 1);
      Candidate b = candidates.get(i);
      if (a.rank() == b.rank()) {
        notes.add("rank " + a.rank() + " has more than one file: " + a.file().getFileName() + ", "
            + b.file().getFileName());
      }
    }
    List<DumpFolder.DumpFile> files = new ArrayList<>(candidates.size());
    for (Candidate c : candidates) {
      files.add(new DumpFolder.DumpFile(c.file(), c.rank()));
    }
    return new DumpFolder.Listing(dir, chosen == null ? "" : chosen, files, notes);
  }

  /**
   * The rank in a dump file name: the digits at its end, before an optional {@code .json}. The prefix may
   * contain digits and host names ({@code nccl_trace_rank_container-node07_40} is rank 40).
   *
   * @return the rank, or empty when the name does not end in one
   */
  public static OptionalInt rankFromFileName(String fileName) {
    Matcher m = RANKED.matcher(Objects.requireNonNull(fileName, "fileName"));
    return m.matches() ? OptionalInt.of(Integer.parseInt(m.group(2))) : OptionalInt.empty();
  }

  /**
   * The rank in a dump file name that starts with {@code prefix}: the digits at the end of what follows it.
   *
   * @return the rank, or empty when the name does not start with the prefix or does not end in a rank
   */
  static OptionalInt rankFromFileName(String fileName, String prefix) {
    Objects.requireNonNull(fileName, "fileName");
    Objects.requireNonNull(prefix, "prefix");
    if (!fileName.startsWith(prefix)) {
      return OptionalInt.empty();
    }
    String rest = fileName.substring(prefix.length());
    Matcher m = RANKED.matcher(rest);
    return m.matches() ? OptionalInt.of(Integer.parseInt(m.group(2))) : OptionalInt.empty();
  }

  private record Candidate(Path file, String prefix, int rank) {}

  /**
   * The one prefix the dumps' names share; null when there are no dumps.
   *
   * @throws DumpFormatException when they have several
   */
  private static String choosePrefix(Path dir, List<Candidate> dumps) throws DumpFormatException {
    Map<String, List<Candidate>> families = new TreeMap<>();
    dumps.forEach(c -> families.computeIfAbsent(c.prefix(), p -> new ArrayList<>()).add(c));
    if (families.size() <= 1) {
      return families.isEmpty() ? null : families.keySet().iterator().next();
    }
    StringBuilder found = new StringBuilder();
    String common = null;
    for (Map.Entry<String, List<Candidate>> f : families.entrySet()) {
      found.append(found.length() == 0 ? "" : ", ").append('\'').append(f.getKey()).append("' (")
          .append(f.getValue().size()).append(f.getValue().size() == 1 ? " file)" : " files)");
      common = common == null ? f.getKey() : commonPrefix(common, f.getKey());
    }
    String hint = common.replaceAll("\\d+$", "");
    throw new DumpFormatException(dir, "cannot tell which files are the dumps: their names have "
        + families.size() + " different prefixes (" + found + "); choose one with --prefix"
        + (hint.isEmpty() ? "" : ", or --prefix '" + hint + "' if they are all one job's dumps with host names"
            + " in them"));
  }

  private static String commonPrefix(String a, String b) {
    int n = 0;
    while (n < a.length() && n < b.length() && a.charAt(n) == b.charAt(n)) {
      n++;
    }
    return a.substring(0, n);
  }

  private static boolean looksLikeDump(Path file) {
    try (InputStream in = Files.newInputStream(file)) {
      byte[] head = in.readNBytes(SNIFF_BYTES);
      return head.length > 0 && ((head[0] & 0xff) == PickleOpcodes.PROTO || JsonDumps.looksLikeJson(head,
          head.length));
    } catch (IOException e) {
      return true; // unreadable: let reading it report the problem
    }
  }

  private byte[] load(Path file) throws DumpFormatException {
    try {
      if (!Files.isRegularFile(file)) {
        throw new DumpFormatException(file, Files.exists(file) ? "not a regular file" : "no such file");
      }
      long size = Files.size(file);
      if (size > maxFileBytes) {
        throw new DumpFormatException(file, tooLarge(size));
      }
      try (InputStream in = Files.newInputStream(file)) {
        // A large file that is no dump fails on its first bytes, before a gigabyte of it is read or allocated. One
        // of a few megabytes (a real dump) is read whole and decoded once: decoding its first bytes twice was 4 % of
        // a 512-rank folder's reading, for a failure that comes with the same message either way.
        byte[] head = in.readNBytes((int) Math.min(PREFIX_BYTES, maxFileBytes + 1));
        if (size > PREFIX_CHECKED_ABOVE && head.length > 0 && (head[0] & 0xff) == PickleOpcodes.PROTO) {
          try {
            PickleDecoder.checkPrefix(head, head.length);
          } catch (DumpProblem p) {
            throw new DumpFormatException(file, p.getMessage());
          }
        }
        // The rest goes into one array of the file's size; the file may still grow while read (a dump being written).
        byte[] data = java.util.Arrays.copyOf(head, (int) Math.min(Math.max(size, head.length), maxFileBytes + 1));
        int n = head.length;
        n += in.readNBytes(data, n, data.length - n);
        if (n == data.length) {
          byte[] more = in.readNBytes((int) Math.max(0, maxFileBytes + 1 - n));
          if (more.length > 0) {
            data = java.util.Arrays.copyOf(data, n + more.length);
            System.arraycopy(more, 0, data, n, more.length);
            n += more.length;
          }
        }
        if (n > maxFileBytes) {
          throw new DumpFormatException(file, tooLarge(n));
        }
        return n == data.length ? data : java.util.Arrays.copyOf(data, n);
      }
    } catch (NoSuchFileException e) {
      throw new DumpFormatException(file, "no such file", e);
    } catch (IOException e) {
      throw new DumpFormatException(file, "cannot read the file: " + e.getMessage(), e);
    }
  }

  private String tooLarge(long size) {
    return "the file is " + size + " bytes, over the limit of " + maxFileBytes + " bytes for a dump";
  }

  private static int firstNonSpace(byte[] content) {
    for (byte b : content) {
      if (b != ' ' && b != '\t' && b != '\n' && b != '\r') {
        return b & 0xff;
      }
    }
    return content[0] & 0xff;
  }

  /** Configuration of a {@link DumpReader}. */
  public static final class Builder {
    private long maxFileBytes = DEFAULT_MAX_FILE_BYTES;

    private Builder() {}

    /**
     * Files larger than this are refused before they are read.
     *
     * @throws IllegalArgumentException unless {@code 1 <= bytes <= MAX_FILE_BYTES_LIMIT}
     */
    public Builder maxFileBytes(long bytes) {
      if (bytes < 1 || bytes > MAX_FILE_BYTES_LIMIT) {
        throw new IllegalArgumentException("maxFileBytes must be in 1.." + MAX_FILE_BYTES_LIMIT + ", got " + bytes);
      }
      this.maxFileBytes = bytes;
      return this;
    }

    public DumpReader build() {
      return new DumpReader(this);
    }
  }
}

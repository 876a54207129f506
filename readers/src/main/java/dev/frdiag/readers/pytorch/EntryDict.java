package dev.frdiag.readers.pytorch;

/**
 * An entry dict {@link PickleDecoder} read straight from its bytes ({@link EntryBytes}): its values by
 * {@link EntryKey}, so that {@link EntryDecoder} takes them without looking a key up. As a map it is what the generic
 * path would have given: the same keys, in the file's order, with the same values.
 */
final class EntryDict extends DecodedDict {
  private final Object[] fields;
  /** The keys' ordinals in file order; entries of one ring share one array. */
  private final byte[] order;

  /**
   * @param fields the values by key ordinal, null where the entry lacks the key and {@link EntryKey#NONE} for a
   *     None; kept, not copied
   * @param order the ordinals of the keys present, in file order; kept, not copied
   */
  EntryDict(Object[] fields, byte[] order) {
    this.fields = fields;
    this.order = order;
  }

  /** The values by key ordinal (see the constructor); the caller must not change them. */
  Object[] fields() {
    return fields;
  }

  @Override
  Object keyAt(int i) {
    return EntryKey.of(order[i]).text;
  }

  @Override
  Object valueAt(int i) {
    Object v = fields[order[i]];
    return v == EntryKey.NONE ? null : v;
  }

  @Override
  public int size() {
    return order.length;
  }
}

// The in-process caches of hot paths are plain Maps kept to a bounded size: the oldest entry (the first a
// Map iterates) goes first. Enough where entries are cheap to make again and the working set is small.

/** Puts `value` under `key`, first dropping the oldest entry when `cache` holds `atMost` already; answers `value`. */
export function remember<K, V>(cache: Map<K, V>, key: K, value: V, atMost = 1000): V {
  cache.delete(key);
  if (cache.size >= atMost) cache.delete(cache.keys().next().value!);
  cache.set(key, value);
  return value;
}

/** A Map for each owner object (a database, say), made on its first use and gone with the owner. */
export function mapPerOwner<O extends object, K, V>(): (owner: O) => Map<K, V> {
  const maps = new WeakMap<O, Map<K, V>>();
  return (owner) => {
    let map = maps.get(owner);
    if (!map) maps.set(owner, (map = new Map<K, V>()));
    return map;
  };
}

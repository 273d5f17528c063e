// The in-process caches of hot paths are plain Maps kept to a bounded size: the oldest entry (the first a
// Map iterates) goes first. Enough where entries are cheap to make again and the working set is small.

/** Puts `value` under `key`, first dropping the oldest entry when `cache` holds `atMost` already; answers `value`. */
export function remember<K, V>(cache: Map<K, V>, key: K, value: V, atMost = 1000): V {
  cache.delete(key);
  if (cache.size >= atMost) cache.delete(cache.keys().next().value!);
  cache.set(key, value);
  return value;
}

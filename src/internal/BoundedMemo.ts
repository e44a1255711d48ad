/**
 * A function of a string whose results are kept for up to `limit` distinct
 * arguments: for a value a client sends with every request (a header), worked
 * out once. Past the limit a new argument is worked out each time and not
 * kept, so values a client makes up cannot grow memory.
 */
export const boundedMemo = <A>(compute: (key: string) => A, limit: number): (key: string) => A => {
  const kept = new Map<string, A>()
  return (key) => {
    let value = kept.get(key)
    if (value === undefined) {
      value = compute(key)
      if (kept.size < limit) kept.set(key, value)
    }
    return value
  }
}

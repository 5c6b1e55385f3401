/**
 * The agent workflow's activity proxies. Activity results whose content the worker could not read back from the
 * content store (src/temporal/content/) arrive as an UNRESOLVED_CONTENT value; through these proxies they fail
 * the run with ContentMissingError or ContentDamagedError naming the step and the blob, instead of reaching the
 * agent as a value. In a later segment of a run that continued as new, every input also names the run key
 * (src/temporal/workflow/continuation.ts), so the activity records on the run's one tape and stages in its one
 * booth.
 */
import { resolvedOrThrow } from '../content/unresolvedContent';

export function checkedActivities<T extends object>(activities: T, runKey?: string): T {
  return new Proxy(activities, {
    get(target, name, receiver) {
      const fn = Reflect.get(target, name, receiver) as unknown;
      if (typeof fn !== 'function') return fn;
      return async (...args: unknown[]) => {
        const first = args[0];
        const step = (first as { step?: unknown } | undefined)?.step;
        const sent =
          runKey !== undefined && typeof first === 'object' && first !== null && !Array.isArray(first)
            ? [{ ...first, runKey }, ...args.slice(1)]
            : args;
        const value = await (fn as (...a: unknown[]) => Promise<unknown>)(...sent);
        return resolvedOrThrow(
          value,
          typeof step === 'number'
            ? { step, what: `the result of step ${step} (${String(name)})` }
            : { what: `the result of ${String(name)}` },
        );
      };
    },
  });
}

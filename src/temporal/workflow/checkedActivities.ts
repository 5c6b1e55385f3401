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
      // Not async: Temporal's workflow sandbox captures a stack trace for every promise it sees created (its
      // stack-trace query), so each async layer and each await costs one; this wrapper adds a single `then`.
      return (...args: unknown[]): Promise<unknown> => {
        const first = args[0];
        const step = (first as { step?: unknown } | undefined)?.step;
        const sent =
          runKey !== undefined && typeof first === 'object' && first !== null && !Array.isArray(first)
            ? [{ ...first, runKey }, ...args.slice(1)]
            : args;
        let scheduled: Promise<unknown>;
        try {
          scheduled = (fn as (...a: unknown[]) => Promise<unknown>)(...sent);
        } catch (err) {
          return Promise.reject(err);
        }
        return scheduled.then((value) =>
          resolvedOrThrow(
            value,
            typeof step === 'number'
              ? { step, what: `the result of step ${step} (${String(name)})` }
              : { what: `the result of ${String(name)}` },
          ),
        );
      };
    },
  });
}

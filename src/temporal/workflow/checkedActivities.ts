/**
 * Activity results whose content the worker could not read back from the content store (src/temporal/content/)
 * arrive as an UNRESOLVED_CONTENT value; through these proxies they fail the run with ContentMissingError or
 * ContentDamagedError naming the step and the blob, instead of reaching the agent as a value.
 */
import { resolvedOrThrow } from '../content/unresolvedContent';

export function checkedActivities<T extends object>(activities: T): T {
  return new Proxy(activities, {
    get(target, name, receiver) {
      const fn = Reflect.get(target, name, receiver) as unknown;
      if (typeof fn !== 'function') return fn;
      return async (...args: unknown[]) => {
        const step = (args[0] as { step?: unknown } | undefined)?.step;
        const value = await (fn as (...a: unknown[]) => Promise<unknown>)(...args);
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

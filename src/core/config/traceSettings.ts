import { KernelFamilySpec, TraceAnalysisOptions } from '../trace/types';
import { SettingsError } from './target';
import { unboundedBacktracking } from '../trace/userPattern';

/**
 * The user's additions to trace analysis (settings `inferenceBench.kernelFamilies` and
 * `inferenceBench.stepAnnotation`), checked here so that a bad regular expression is named in a
 * message instead of failing an analysis later.
 */
export function parseTraceSettings(rawFamilies: unknown, rawStepAnnotation: unknown, where = 'inferenceBench'): TraceAnalysisOptions {
  const options: TraceAnalysisOptions = {};
  if (rawFamilies !== undefined && rawFamilies !== null) {
    if (!Array.isArray(rawFamilies))
      throw new SettingsError(`${where}.kernelFamilies must be a list such as [{"category": "all-reduce", "pattern": "my_allreduce"}].`);
    const families: KernelFamilySpec[] = rawFamilies.map((raw, i) => {
      const at = `${where}.kernelFamilies[${i}]`;
      if (typeof raw !== 'object' || raw === null) throw new SettingsError(`${at} must be an object with "category" and "pattern".`);
      const { category, pattern, flags } = raw as Record<string, unknown>;
      if (typeof category !== 'string' || !category.trim()) throw new SettingsError(`${at}: "category" is missing (for example "all-reduce").`);
      if (typeof pattern !== 'string' || !pattern) throw new SettingsError(`${at}: "pattern" is missing (a regular expression matched against kernel names).`);
      if (flags !== undefined && typeof flags !== 'string') throw new SettingsError(`${at}: "flags" must be a string such as "i".`);
      compile(pattern, flags, at);
      return { category: category.trim(), pattern, flags };
    });
    if (families.length) options.extraFamilies = families;
  }
  if (rawStepAnnotation !== undefined && rawStepAnnotation !== null && rawStepAnnotation !== '') {
    if (typeof rawStepAnnotation !== 'string') throw new SettingsError(`${where}.stepAnnotation must be a regular expression as a string.`);
    compile(rawStepAnnotation, undefined, `${where}.stepAnnotation`);
    options.stepAnnotation = rawStepAnnotation;
  }
  return options;
}

function compile(pattern: string, flags: string | undefined, at: string): void {
  try {
    new RegExp(pattern, flags);
  } catch (err) {
    throw new SettingsError(`${at}: "${pattern}" is not a valid regular expression (${(err as Error).message}).`);
  }
  const why = unboundedBacktracking(pattern);
  if (why) throw new SettingsError(`${at}: "${pattern}" is refused: ${why}.`);
}

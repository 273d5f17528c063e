import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../server/platform/config.js';

describe('docs/configuration.md', () => {
  it('lists every setting of the configuration schema', () => {
    const doc = fs.readFileSync('docs/configuration.md', 'utf8');
    const documented = (name: string) => {
      if (doc.includes(`\`${name}\``)) return true;
      // Grouped rows: `PROCESSOR_A_PRICE_LITE`, `_PRO`, `_ENTERPRISE`
      const suffix = name.match(/_(PRO|ENTERPRISE)$/)?.[0];
      return Boolean(
        suffix && doc.includes(`\`${suffix}\``) && doc.includes(`\`${name.slice(0, -suffix.length)}_LITE\``),
      );
    };
    expect(Object.keys(configSchema.shape).filter((name) => !documented(name))).toEqual([]);
  });
});

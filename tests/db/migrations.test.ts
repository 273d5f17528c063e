import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { migrations } from '../../db/migrate.js';

describe('db/migrate.ts', () => {
  it('lists every migration file of db/migrations, in file-name order', () => {
    const files = fs
      .readdirSync(path.resolve('db/migrations'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => f.replace(/\.ts$/, ''))
      .sort();
    expect(Object.keys(migrations)).toEqual(files);
  });
});

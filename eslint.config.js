// typescript-eslint's recommended type-aware rules over the application, the tests and the bench
// (`npm run lint`). Formatting is Prettier's (`npm run format`), not ESLint's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'client/dist/',
      'dist/',
      'data/',
      'coverage/',
      'tests/fixtures/',
      'tests/client-consumer/',
      'tests/third-party/',
      'bench/.scratch/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // `async` without `await` still turns a throw into a rejection, which callers of a Promise-returning
      // interface rely on.
      '@typescript-eslint/require-await': 'off',
      // A `let x!: T` assigned once, after a closure that reads it was made, cannot be a const.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // `_` names what a signature or a destructuring must have but the code does not use.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // Migrations are frozen once landed and so take Kysely<any>, never the app's Database type (Kysely's rule).
    files: ['db/migrations/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Tests read JSON answers as `any` and assert on their fields: the no-unsafe family would flag every
    // `res.body.x`. The application code keeps every rule.
    files: ['tests/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // Fake servers and sockets take async handlers whose rejections the test sees anyway.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      // expect(obj.method) and destructured helpers are the tests' idiom, never called with a lost `this`.
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  { files: ['eslint.config.js'], ...tseslint.configs.disableTypeChecked },
  {
    // The build and the launcher are plain JavaScript, so that `npm start` runs compiled code without tsx.
    files: ['scripts/**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { process: 'readonly', console: 'readonly' },
    },
  },
);

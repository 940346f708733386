// Lint: neostandard's rules without its layout rules (Prettier lays the code out at 120 columns:
// .prettierrc.json, checked by `npm run lint`, applied by `npm run format`), and typescript-eslint's
// type-aware checks for promises: an unawaited promise loses its error, or a write.
import neostandard from 'neostandard'

export default [
  ...neostandard({
    ts: true,
    noStyle: true,
    ignores: [
      'dist/**',
      '.build/**',
      'data/**',
      'coverage/**',
      'test/.cache/**',
      'test/artifacts/**',
      'bench/results/**'
    ]
  }),
  {
    rules: {
      // Field names of the API are snake_case.
      camelcase: 'off',
      // `void promise` marks a promise deliberately not awaited (no-floating-promises asks for it).
      'no-void': ['error', { allowAsStatement: true }]
    }
  },
  {
    // The dashboard's modules run in the browser as served (no build step); uPlot is window.uPlot.
    files: ['src/dashboard/**/*.js'],
    languageOptions: {
      globals: { window: 'readonly', document: 'readonly', sessionStorage: 'readonly', ResizeObserver: 'readonly' }
    }
  },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname }
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // tap runs subtests whether or not their promise is awaited.
          allowForKnownSafePromises: [{ from: 'package', name: 'PromiseWithSubtest', package: '@tapjs/core' }]
        }
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      // A type and the value of the same name (`AccountData` schema and type) are one declaration to TypeScript.
      '@typescript-eslint/no-redeclare': 'off'
    }
  },
  {
    // The service's own code says what it holds; tests and bench may still use `any` for
    // the bodies they send and read.
    files: ['src/**/*.ts', 'schemas/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error'
    }
  }
]

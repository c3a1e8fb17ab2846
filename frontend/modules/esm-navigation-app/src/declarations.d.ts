declare module '*.scss';

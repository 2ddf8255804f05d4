import type { CommandResult, CommandRunner } from '../../../runtime-sdk/updates/commands.js';

export interface CommandCall {
  file: string;
  args: readonly string[];
  env: NodeJS.ProcessEnv | undefined;
}

/** Programs as a test describes them: which exist on PATH, and what each run answers. */
export class FakeCommands implements CommandRunner {
  readonly calls: CommandCall[] = [];

  constructor(
    private readonly answer: (call: CommandCall) => Promise<CommandResult> | CommandResult = () => ({ code: 0, stdout: '', stderr: '' }),
    private readonly onPath: Record<string, string> = {},
  ) {}

  async run(file: string, args: readonly string[], options: { env?: NodeJS.ProcessEnv } = {}): Promise<CommandResult> {
    const call = { file, args, env: options.env };
    this.calls.push(call);
    return this.answer(call);
  }

  async find(name: string): Promise<string | undefined> {
    return this.onPath[name];
  }
}

/** The floor's one activity: returns its input, so a step costs what Temporal alone charges. */
export const floorActivities = {
  async noop(i: number): Promise<number> {
    return i;
  },
};

export type FloorActivities = typeof floorActivities;
